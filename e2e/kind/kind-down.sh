#!/usr/bin/env bash
# Deletes the kind cluster of kind-up.sh and stops the local registry (the images and the
# registry's volume stay cached).
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
bash "$e2e/kind/build-kind.sh"   # a fresh clone has none yet
"$e2e/.kind/bin/kind" delete cluster --name "${KIND_CLUSTER:-homing}" --kubeconfig "$e2e/.kind/kubeconfig"
docker rm -f homing-registry >/dev/null 2>&1 || true
