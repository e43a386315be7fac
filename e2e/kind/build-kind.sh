#!/usr/bin/env bash
# The kind CLI, at a pinned version, into e2e/.kind/bin (kind-up.sh and kind-down.sh use it).
# Reused while the pin is the same.
set -euo pipefail
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
bin="${HOMING_KIND_BIN_DIR:-$e2e/.kind/bin}"
pkg=sigs.k8s.io/kind@v0.33.0
mkdir -p "$bin"
[[ -x $bin/kind && $(cat "$bin/.kind.pkg" 2>/dev/null) == "$pkg" ]] && exit 0
echo "building kind" >&2
GOBIN=$bin GOFLAGS=-mod=mod CGO_ENABLED=0 go install -trimpath "$pkg"
echo "$pkg" >"$bin/.kind.pkg"
