#!/usr/bin/env bash
# Builds the helm CLI pinned in e2e/helm/go.mod (its `tool` line) into the git-ignored
# cache (e2e/.bin) for the chart tests. Skipped when go.mod and go.sum are unchanged since
# the last build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"
mkdir -p "$bin"
source "$here/gobuild.sh"
mod="$here/helm"
# Stamped as helm's own Makefile does: its version, and the Kubernetes version that
# `helm template` and `helm lint` assume (from client-go v0.X.Y: 1.X; unstamped, 1.20).
version=$(cd "$mod" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
client_go=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/client-go)
minor=$(cut -d. -f2 <<<"$client_go")
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$minor"
done
GOBUILD_LDFLAGS="$ldflags" gobuild helm helm helm.sh/helm/v3/cmd/helm
