#!/usr/bin/env bash
# Builds the Kubernetes programs of the kind node image from e2e/kind/k8s/go.mod into a
# git-ignored cache (e2e/.kind/bin), stamped with their release version: kubeadm and the
# kubelet compare versions, and an unstamped build reports v0.0.0-master.
set -euo pipefail
# nice: the machine's cores are shared with benchmarks.
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
here=$e2e                      # gobuild.sh resolves module dirs relative to e2e/
bin="${HOMING_KIND_BIN_DIR:-$e2e/.kind/bin}"
mkdir -p "$bin"
source "$e2e/gobuild.sh"
version=$(cd "$e2e/kind/k8s" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${version#v1.}; minor=${minor%%.*}
v=k8s.io/component-base/version; c=k8s.io/client-go/pkg/version
flags="-s -w"
for p in $v $c; do
  flags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
export GOBUILD_LDFLAGS=$flags
for name in kubelet kubeadm kube-proxy kubectl kube-apiserver kube-controller-manager kube-scheduler; do
  gobuild "$name" kind/k8s "k8s.io/kubernetes/cmd/$name" "$flags"
done
echo "$version" > "$bin/.version"
