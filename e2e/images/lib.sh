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

# Debian's name for this machine's architecture (amd64, arm64), as docker's platforms spell it.
host_arch() { dpkg --print-architecture 2>/dev/null || { uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/'; }; }

# The local Debian base for an architecture: the host's keeps its first name (the kind stage's).
debian_base() {
  if [[ $1 == "$(host_arch)" ]]; then echo homing-local/debian:bookworm; else echo "homing-local/debian:bookworm-$1"; fi
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# docker build -q with its stderr kept back unless it fails (the legacy builder warns on every run).
quiet_build() {
  local err
  err=$(mktemp)
  if ! docker build -q "$@" >/dev/null 2>"$err"; then cat "$err" >&2; rm -f "$err"; return 1; fi
  rm -f "$err"
}

# HOMING_IMAGES says where an image that has an upstream name comes from: `auto` (the default)
# pulls it when a registry answers and builds it here when none does (these machines reach no
# image registry); `build` never pulls; `pull` fails unless the pull works.
# pulled IMAGE: true when IMAGE is here (present or just pulled), false when it is to be built.
pulled() {
  local mode=${HOMING_IMAGES:-auto} err
  case $mode in
    build) return 1 ;;
    auto|pull) ;;
    *) echo "HOMING_IMAGES=$mode: use auto, build or pull" >&2; exit 2 ;;
  esac
  have_image "$1" && return 0
  err=$(timeout "${HOMING_PULL_SECONDS:-900}" docker pull -q "$1" 2>&1 >/dev/null) && return 0
  [[ $mode == pull ]] && { echo "HOMING_IMAGES=pull: docker pull $1 failed: ${err##*$'\n'}" >&2; exit 1; }
  echo "$1 could not be pulled (${err##*$'\n'}): built here instead" >&2
  return 1
}
