#!/usr/bin/env bash
# A test image with one large layer of random bytes (random, so that compression cannot
# shrink the pull), pushed to the local registry of registry-up.sh as homing-test/big:<N>g.
# Skipped when the registry already holds the tag (its blobs outlive clusters and clones).
# Prints the name the nodes pull it by.   Usage: big-image.sh [GiB, default 2]
set -euo pipefail
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0
gib=${1:-2}
port=${REGISTRY_PORT:-5001}
tag=homing-test/big:${gib}g
if ! curl -fsS -o /dev/null -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
     "http://127.0.0.1:$port/v2/homing-test/big/manifests/${gib}g"; then
  if ! have_image "$tag"; then
    echo "building $tag: ${gib} GiB of random bytes" >&2
    printf 'FROM homing-local/debian:bookworm\nRUN head -c %d /dev/urandom >/payload\n' $((gib * 1024 * 1024 * 1024)) \
      | quiet_build -t "$tag" -
  fi
  echo "pushing $tag to the local registry" >&2
  docker tag "$tag" "127.0.0.1:$port/$tag"
  docker push -q "127.0.0.1:$port/$tag" >/dev/null
  docker rmi "127.0.0.1:$port/$tag" >/dev/null
fi
echo "homing-registry:5000/$tag"
