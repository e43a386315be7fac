#!/usr/bin/env bash
# make kind-pulls: the local registry, the large test image, then e2e/kind/pulls.py on the
# kind cluster with homing installed (make kind-install). docs/kind.md, "Real image pulls".
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
bash "$e2e/kind/registry-up.sh"
image=$(bash "$e2e/kind/big-image.sh" "${PULL_GIB:-2}")
exec "$e2e/../.venv/bin/python" "$e2e/kind/pulls.py" --image "$image" ${PULLS_COMPARE:+--compare}
