#!/usr/bin/env bash
# Builds the control-plane programs pinned in e2e/controlplane/go.mod into a
# git-ignored cache (e2e/.bin), and kube-scheduler's gang release pinned in
# e2e/controlplane-1.37/go.mod into e2e/.bin/k8s-1.37. Re-running is cheap: a
# program is rebuilt only when its go.mod changed since it was built.
#
# With program names as arguments (`build-binaries.sh etcd kube-apiserver`), only those of
# the first module are built: the demo runs three of the eight, and on a new machine each
# other one is minutes of compiling (1.37's three most of all: another Kubernetes release).
set -euo pipefail
wanted=" $* "
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"

# The Kubernetes release a module pins, stamped into its programs as kind's are
# (kind/build-k8s.sh): unstamped, the API server reports v0.0.0-master, and Helm refuses a
# chart whose kubeVersion asks for a real release (charts/homing needs 1.30+).
stamp_flags() {
  local version minor flags="-s -w" p
  version=$(cd "$1" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
  minor=${version#v1.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=$version -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$flags"
}

# build <module folder> <output folder> <name=package>...
build() {
  local folder="$1" out="$2"; shift 2
  local mod="$here/$folder"
  mkdir -p "$out"
  local stamp="$out/.gomod.sha" want have flags
  flags=$(stamp_flags "$mod")
  want=$({ cat "$mod/go.mod" "$mod/go.sum"; echo "$flags"; } | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [[ "$have" != "$want" ]]; then  # every program of the old pins goes, so a subset built now leaves none stale
    for pair in "$@"; do rm -f "$out/${pair%%=*}"; done
  fi
  for pair in "$@"; do
    local name=${pair%%=*} pkg=${pair#*=}
    if [[ -x "$out/$name" ]] || [[ "$wanted" != "  " && "$wanted" != *" $name "* ]]; then
      continue
    fi
    echo "building $name from e2e/$folder (first run takes several minutes)" >&2
    (cd "$mod" && go build -trimpath -ldflags="$flags" -o "$out/$name" "$pkg")
  done
  echo "$want" > "$stamp"
}

build controlplane "$bin" \
  etcd=go.etcd.io/etcd/server/v3 \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl
if [[ "$wanted" != "  " ]]; then
  for name in "$@"; do  # a misspelt name would otherwise build nothing and fail later, far away
    [[ -x "$bin/$name" ]] || { echo "build-binaries.sh: e2e/controlplane has no program $name" >&2; exit 2; }
  done
  exit 0
fi
build controlplane-1.37 "$bin/k8s-1.37" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
