#!/usr/bin/env bash
# The integration tests against the kind cluster through its kubeconfig (make kind-e2e; the
# tests to run are the arguments). The operator runs on this host; kind's nodes reach its
# webhook at the kind network's gateway. Node objects that are not kind's (the fake nodes a
# previous run left behind) are deleted first, so every run starts from the same cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
name=${KIND_CLUSTER:-homing}
kubeconfig=$root/e2e/.kind/kubeconfig
kubectl=(kubectl_bin --kubeconfig "$kubeconfig")
kubectl_bin() { "$root/e2e/.bin/kubectl" "$@"; }

gateway=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -m1 '\.')
mapfile -t kind_nodes < <("$root/e2e/.kind/bin/kind" get nodes --name "$name")
mapfile -t stale < <("${kubectl[@]}" get nodes -o name | grep -vxF -f <(printf 'node/%s\n' "${kind_nodes[@]}") || true)
if ((${#stale[@]})); then
  echo "deleting ${#stale[@]} Node objects left by an earlier run"
  "${kubectl[@]}" delete "${stale[@]}" --wait=false >/dev/null
fi

cd "$root"
HOMING_E2E_KUBECONFIG=$kubeconfig HOMING_E2E_WEBHOOK_HOST=$gateway \
  exec .venv/bin/python -m pytest -q -p no:cacheprovider --timeout 120 "$@"
