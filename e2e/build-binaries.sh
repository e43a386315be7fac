#!/usr/bin/env bash
# Builds the control-plane programs pinned in e2e/controlplane/go.mod into a
# git-ignored cache (e2e/.bin). Re-running is cheap: a program is rebuilt only
# when go.mod changed since it was built.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"
mod="$here/controlplane"
mkdir -p "$bin"
stamp="$bin/.gomod.sha"
want=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -d' ' -f1)

declare -A programs=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)

have=$(cat "$stamp" 2>/dev/null || true)
for name in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if [[ -x "$bin/$name" && "$have" == "$want" ]]; then
    continue
  fi
  echo "building $name (first run takes several minutes)" >&2
  (cd "$mod" && go build -trimpath -ldflags='-s -w' -o "$bin/$name" "${programs[$name]}")
done
echo "$want" > "$stamp"
