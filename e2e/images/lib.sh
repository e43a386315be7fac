# Sourced by the e2e/images and e2e/kind scripts.

# The Debian mirror this machine's apt uses, read at run time (never written in the repo).
debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [[ -n $uri ]] || uri=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [[ -n $uri ]] || { echo "no Debian mirror in /etc/apt/sources.list(.d)" >&2; return 1; }
  echo "$uri"
}

# A short hash of files' contents (names included), for content-addressed image tags.
content_hash() {
  (cd "$repo" && find "$@" -type f -not -path "*/__pycache__/*" -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-12
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# docker build -q with its stderr kept back unless it fails (the legacy builder warns on every run).
quiet_build() {
  local err
  err=$(mktemp)
  if ! docker build -q "$@" >/dev/null 2>"$err"; then cat "$err" >&2; rm -f "$err"; return 1; fi
  rm -f "$err"
}
