#!/usr/bin/env bash
# Builds Volcano's scheduler and controller manager (pinned in e2e/volcano/go.mod) and
# kwok's fake-node controller (pinned in e2e/kwok/go.mod) into the git-ignored cache
# (e2e/.bin). Re-running is cheap: a program is rebuilt only when its module's go.mod or
# go.sum changed since it was built. See e2e/volcano/NOTES.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"
mkdir -p "$bin"

# build NAME MODULE-DIR PACKAGE
build() {
  local name=$1 mod=$here/$2 pkg=$3
  local stamp="$bin/.$name.gomod.sha" want have
  want=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [[ -x "$bin/$name" && "$have" == "$want" ]]; then
    return
  fi
  echo "building $name (first run takes several minutes)" >&2
  (cd "$mod" && go build -trimpath -ldflags='-s -w' -o "$bin/$name" "$pkg")
  echo "$want" > "$stamp"
}

build vc-scheduler volcano volcano.sh/volcano/cmd/scheduler
build vc-controller-manager volcano volcano.sh/volcano/cmd/controller-manager
build kwok kwok sigs.k8s.io/kwok/cmd/kwok
