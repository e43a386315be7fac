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
programs=(kubelet kubeadm kube-proxy kubectl kube-apiserver kube-controller-manager kube-scheduler)
[[ ${1:-} == kubectl ]] && programs=(kubectl)
for name in "${programs[@]}"; do
  gobuild "$name" kind/k8s "k8s.io/kubernetes/cmd/$name" "$flags"
done
[[ ${1:-} == kubectl ]] && exit 0
echo "$version" > "$bin/.version"

# crictl and CoreDNS are not packaged in bookworm: built from their modules at a pinned
# version (verified by Go's checksum database). CoreDNS: the version kubeadm deploys.
goinstall() {
  local name=$1 pkg=$2
  [[ -x $bin/$name && $(cat "$bin/.$name.pkg" 2>/dev/null) == "$pkg" ]] && return
  echo "building $name" >&2
  GOBIN=$bin GOFLAGS=-mod=mod CGO_ENABLED=0 go install "$pkg"
  echo "$pkg" >"$bin/.$name.pkg"
}
goinstall crictl sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
goinstall coredns github.com/coredns/coredns@v1.13.1

# The pod sandbox ("pause") from the release's own C source, static.
src=$(cd "$e2e/kind/k8s" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
pause_version=3.10.1
if [[ ! -x $bin/pause || $(cat "$bin/.pause.v" 2>/dev/null) != "$pause_version" ]]; then
  gcc -Os -Wall -static -DVERSION="v$pause_version" -o "$bin/pause" "$src"
  echo "$pause_version" >"$bin/.pause.v"
fi
