#!/usr/bin/env bash
# The homing image, built from the repository's Dockerfile: on the Dockerfile's own Python base
# where a registry answers, else on local bases (the Debian base, a Python base from it);
# tagged homing:<hash of its inputs and its base>.
# An image whose inputs did not change is reused. Prints the homing image's name.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0   # Debian's docker.io has no buildx; the classic builder suffices

# The Dockerfile's own base where a registry answers (lib.sh, HOMING_IMAGES), as a user builds it.
upstream=$(awk -F= '/^ARG PYTHON_VERSION=/ {v=$2} /^ARG BASE_VARIANT=/ {b=$2} END {print "python:" v "-" b}' "$repo/Dockerfile")
if pulled "$upstream"; then
  python=$upstream
else
  python=$(bash "$e2e/images/build-python-base.sh")   # Debian's python3 on the local Debian base
fi

# The build context is exactly the hashed inputs, sent as a tar: nothing else (.venv, caches)
# is uploaded, and the tag names what was built.
inputs=(Dockerfile requirements.lock pyproject.toml LICENSE README.md operator/homing)
homing=homing:$( { content_hash "${inputs[@]}"; docker image inspect -f '{{.Id}}' "$python"; } | sha256sum | cut -c1-12)
if have_image "$homing"; then echo "$homing: present" >&2
else
  (cd "$repo" && tar -c --exclude=__pycache__ "${inputs[@]}") \
    | nice -n 15 docker build -q -t "$homing" --build-arg BASE="$python" - >/dev/null
  echo "$homing: built" >&2
fi
# The deployment's conditions: UID 10001, read-only root, only /tmp writable.
docker run --rm --user 10001:10001 --read-only --tmpfs /tmp "$homing" --help >/dev/null \
  || { echo "$homing: --help failed" >&2; exit 1; }
docker tag "$homing" homing:local   # a stable name for manifests and kind load
echo "$homing"
