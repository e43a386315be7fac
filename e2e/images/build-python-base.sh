#!/usr/bin/env bash
# The local Python base for the homing image, for one architecture (default: this machine's):
# e2e/images/python.Dockerfile on the local Debian base (build-base.sh). Tagged
# homing-local/python:3.11-bookworm-<hash> (another architecture: ...-bookworm-<arch>-<hash>),
# the hash covering python.Dockerfile and the Debian base's id, so a remade base makes a new
# Python base. Reused when present. Prints the image's name.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0   # Debian's Docker package has no buildx; the classic builder suffices

arch=${1:-$(host_arch)}
bash "$e2e/images/build-base.sh" "$arch"
debian=$(debian_base "$arch")
hash=$( { content_hash e2e/images/python.Dockerfile; docker image inspect -f '{{.Id}}' "$debian"; } | sha256sum | cut -c1-12)
if [[ $arch == "$(host_arch)" ]]; then python=homing-local/python:3.11-bookworm-$hash
else python=homing-local/python:3.11-bookworm-$arch-$hash; fi
if ! have_image "$python"; then
  quiet_build --platform "linux/$arch" -t "$python" --build-arg DEBIAN="$debian" \
    -f "$e2e/images/python.Dockerfile" "$e2e/images"
fi
echo "$python"
