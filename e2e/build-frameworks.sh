#!/usr/bin/env bash
# Builds the LeaderWorkerSet and JobSet controller managers (pinned in e2e/frameworks/*/go.mod)
# into the git-ignored cache (e2e/.bin). A program is rebuilt only when its module's go.mod
# or go.sum changed since it was built. Their CRDs and webhook configurations are read at
# run time from the module cache (e2e/homing_e2e/frameworks.py), never copied.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin="${HOMING_BIN_DIR:-$here/.bin}"
mkdir -p "$bin"

# build NAME MODULE-DIR PACKAGE
build() {
  local name=$1 mod=$here/frameworks/$2 pkg=$3
  local stamp="$bin/.$name.gomod.sha" want have
  want=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [[ -x "$bin/$name" && "$have" == "$want" ]]; then
    return
  fi
  echo "building $name (first run takes a few minutes)" >&2
  (cd "$mod" && go build -trimpath -ldflags='-s -w' -o "$bin/$name" "$pkg")
  echo "$want" > "$stamp"
}

build lws-controller-manager lws sigs.k8s.io/lws/cmd
build jobset-controller-manager jobset sigs.k8s.io/jobset
