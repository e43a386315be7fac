# Sourced by the e2e/build-*.sh scripts: builds one program of a pinned Go module into the
# git-ignored cache, only when the module's go.mod or go.sum (or EXTRA-STAMP) changed since.
# Needs $here (the e2e folder) and $bin (the cache).

# gobuild NAME MODULE-DIR PACKAGE [EXTRA-STAMP]   (MODULE-DIR relative to e2e/;
# GOBUILD_LDFLAGS replaces the default '-s -w', e.g. to stamp a version)
gobuild() {
  local name=$1 mod=$here/$2 pkg=$3 extra=${4:-}
  local stamp="$bin/.$name.gomod.sha" want have
  want=$({ cat "$mod/go.mod" "$mod/go.sum"; [[ -z $extra ]] || echo "$extra"; } | sha256sum | cut -d' ' -f1)
  have=$(cat "$stamp" 2>/dev/null || true)
  if [[ -x "$bin/$name" && "$have" == "$want" ]]; then
    return
  fi
  echo "building $name (first run takes several minutes)" >&2
  (cd "$mod" && go build -trimpath -ldflags="${GOBUILD_LDFLAGS:--s -w}" -o "$bin/$name" "$pkg")
  echo "$want" > "$stamp"
}
