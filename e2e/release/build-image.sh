#!/usr/bin/env bash
# The release's homing image for one platform: build-image.sh PLATFORM TAG [docker build args...]
# (release.py passes --build-arg VERSION=... and the --label flags). Built from the repository's
# Dockerfile on its own Python base where a registry answers (lib.sh's HOMING_IMAGES), else on
# the local bases of e2e/images (Debian's python3 on a debootstrapped bookworm, for arm64 too,
# under QEMU). The build context is the same tar of inputs as e2e/images/build-images.sh sends,
# so the host's image reuses the kind stage's layers: only the labels differ.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
platform=${1:?usage: build-image.sh PLATFORM TAG [docker build args...]} tag=${2:?TAG}
shift 2
arch=${platform#linux/}
[[ $arch == "$(host_arch)" ]] || bash "$e2e/images/ensure-qemu.sh" "$arch"

upstream=$(awk -F= '/^ARG PYTHON_VERSION=/ {v=$2} /^ARG BASE_VARIANT=/ {b=$2} END {print "python:" v "-" b}' "$repo/Dockerfile")
if pulled "$upstream"; then
  base=$upstream   # the builder fetches the platform's variant of the Dockerfile's own base
  args=()
else
  base=$(bash "$e2e/images/build-python-base.sh" "$arch")
  args=(--build-arg "BASE=$base")
fi

# BuildKit where the buildx plugin is (CI), the classic builder where it is not (Debian's Docker package).
if docker buildx version >/dev/null 2>&1; then build=(docker buildx build --load)
else build=(env DOCKER_BUILDKIT=0 docker build); fi

# The builder's stderr is shown only when it fails (the classic builder warns on every run).
inputs=(Dockerfile requirements.lock pyproject.toml LICENSE README.md operator/homing)
err=$(mktemp)
trap 'rm -f "$err"' EXIT
(cd "$repo" && tar -c --exclude=__pycache__ "${inputs[@]}") \
  | nice -n 15 "${build[@]}" -q --platform "$platform" -t "$tag" "${args[@]}" \
      --label "org.opencontainers.image.base.name=$base" "$@" - >/dev/null 2>"$err" \
  || { cat "$err" >&2; echo "build-image: building $tag for $platform failed" >&2; exit 1; }
got=$(docker image inspect -f '{{.Os}}/{{.Architecture}}' "$tag")
[[ $got == "$platform" ]] || { echo "build-image: $tag is $got, not $platform" >&2; exit 1; }
echo "$tag ($platform) on $base" >&2
