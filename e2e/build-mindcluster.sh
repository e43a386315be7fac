#!/usr/bin/env bash
# Builds Volcano's scheduler (the version e2e/volcano/go.mod pins) with MindCluster's
# ascend-volcano-plugin compiled in, from the plugin's source beside the repository
# (../shared/third_party/mind-cluster/ascend-for-volcano, read-only; HOMING_MINDCLUSTER_SRC
# overrides), into the git-ignored e2e/.bin/mindcluster/:
#   vc-scheduler            the scheduler, the plugin registered under the name in plugin-name
#   plugin-name             that name (the tier entry of the scheduler configuration)
#   volcano-v1.15.0.yaml    the plugin's shipped Volcano configuration (its scheduler.conf is read from it)
# The work is done on copies in the git-ignored e2e/.build/mindcluster/: Volcano's module
# from the module cache, the plugin in it at pkg/scheduler/plugins/ascend-volcano-plugin
# with its `package main` renamed, one added file that registers it, and the allocate.go
# edit the plugin's own build.sh makes. Nothing of the plugin enters the repository.
# Re-running is a no-op when neither the plugin's source, the Volcano pin, Go nor this
# script changed. Without the plugin's source it says so and builds nothing (exit 0): the
# tests that need it skip. See docs/dev/mindcluster.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
src="${HOMING_MINDCLUSTER_SRC:-$repo/../shared/third_party/mind-cluster/ascend-for-volcano}"
bin="${HOMING_BIN_DIR:-$here/.bin}"
out="$bin/mindcluster"
work="$here/.build/mindcluster"
# The name build.sh gives the plugin without a service_config.ini (REL_VERSION v26.1.0).
plugin_name=volcano-npu_v26.1.0
plugin_pkg=volcano.sh/volcano/pkg/scheduler/plugins/ascend-volcano-plugin
shipped_conf=build/volcano-v1.15.0.yaml

if [[ ! -f "$src/npu.go" ]]; then
  echo "build-mindcluster: MindCluster's plugin source not found at $src" >&2
  echo "build-mindcluster: (expected ../shared/third_party/mind-cluster/ascend-for-volcano beside the repository);" \
       "not building vc-scheduler with ascend-volcano-plugin, its tests skip" >&2
  exit 0
fi
src=$(cd "$src" && pwd)

# Volcano's generated apis copy must exist for any go command in e2e/volcano (NOTES.md).
[[ -f "$here/volcano/.apis/.homing-stamp" ]] || bash "$here/build-volcano.sh"

tree_hash() {  # every file of the plugin's source, by path and content (build outputs left out)
  (cd "$1" && find . -type f ! -path './output/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
want=$({ tree_hash "$src"; cat "$here/volcano/go.mod" "$here/volcano/go.sum" "$here/volcano/.apis/.homing-stamp" "$0"; go version; } \
  | sha256sum | cut -d' ' -f1)
stamp="$out/.vc-scheduler.sha"
if [[ -x "$out/vc-scheduler" && -f "$out/plugin-name" && "$(cat "$stamp" 2>/dev/null || true)" == "$want" ]]; then
  exit 0
fi
echo "building vc-scheduler with MindCluster's ascend-volcano-plugin (first run takes several minutes)" >&2

volcano=$(cd "$here/volcano" && go list -m -f '{{.Dir}}' volcano.sh/volcano)
[[ ! -d "$work" ]] || chmod -R u+w "$work"
rm -rf "$work"
mkdir -p "$work" "$out"
cp -R "$volcano" "$work/volcano"
chmod -R u+w "$work/volcano"  # the module cache is read-only
plugin_dir="$work/volcano/pkg/scheduler/plugins/ascend-volcano-plugin"
mkdir -p "$plugin_dir"
(cd "$src" && tar --exclude=./output -cf - .) | (cd "$plugin_dir" && tar -xf -)
chmod -R u+w "$plugin_dir"

# 1. A library, not a Go plugin: the root package is `package main` (npu.go, type.go, npu_test.go).
for f in "$plugin_dir"/*.go; do
  sed -i 's/^package main$/package ascendvolcanoplugin/' "$f"
done
if grep -l '^package main$' "$plugin_dir"/*.go; then
  echo "build-mindcluster: a file of the plugin's root package still says package main" >&2
  exit 1
fi

# 2. Registered beside Volcano's own plugins (pkg/scheduler/plugins/factory.go registers those in init).
cat > "$work/volcano/pkg/scheduler/plugins/ascend_volcano_plugin_homing.go" <<EOF
// Added by homing's e2e/build-mindcluster.sh: MindCluster's ascend-volcano-plugin compiled in,
// under its PluginName (set with -ldflags -X, as the plugin's build.sh does for its .so).

package plugins

import (
	ascendvolcanoplugin "$plugin_pkg"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

func init() {
	framework.RegisterPluginBuilder(ascendvolcanoplugin.PluginName, ascendvolcanoplugin.New)
}
EOF

# 3. The plugin's build.sh (patch_all_source) replaces allocate's shortcut for a single
#    feasible node (`case len(nodes) == 1:` and the next two lines) with `default:`, so that
#    node scoring (the plugin's BatchNodeOrderFn) runs for one candidate too. The same sed.
allocate="$work/volcano/pkg/scheduler/actions/allocate/allocate.go"
sed -i '
/case len(nodes) == 1:/ {
    N
    N
    s/case len(nodes) == 1:.*\n.*\n.*/            default:/
}' "$allocate"
if grep -q 'case len(nodes) == 1:' "$allocate"; then
  echo "build-mindcluster: the allocate.go edit of the plugin's build.sh did not apply" >&2
  exit 1
fi
# (build.sh's other edits do not apply to Volcano 1.15: the running.go `switch action {` is
# `switch action.Action {` there, and the predicate-signature edits are for v1.9.0 only.)

# 4. A module of its own: e2e/volcano's pins, Volcano replaced by the patched copy.
mkdir -p "$work/mod"
sed -e "s|^module .*|module homing.io/e2e/mindcluster|" \
    -e "s|volcano.sh/apis => ./.apis|volcano.sh/apis => $here/volcano/.apis|" \
    "$here/volcano/go.mod" > "$work/mod/go.mod"
printf '\nreplace volcano.sh/volcano => ../volcano\n' >> "$work/mod/go.mod"
cp "$here/volcano/go.sum" "$work/mod/go.sum"

(cd "$work/mod" && nice -n 10 go build -trimpath \
  -ldflags="-s -w -X $plugin_pkg.PluginName=$plugin_name" -o "$out/vc-scheduler.tmp" volcano.sh/volcano/cmd/scheduler)
mv "$out/vc-scheduler.tmp" "$out/vc-scheduler"
install -m 644 "$src/$shipped_conf" "$out/"
echo "$plugin_name" > "$out/plugin-name"
echo "$want" > "$stamp"
echo "built $out/vc-scheduler (plugin $plugin_name)" >&2
