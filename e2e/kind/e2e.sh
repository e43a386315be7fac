#!/usr/bin/env bash
# The integration tests against the kind cluster through its kubeconfig (make kind-e2e; the
# tests to run are the arguments): make kind-up's cluster, or with KIND_CLUSTER=<name> a kind
# cluster of the user's own. The operator runs on this host; kind's nodes reach its
# webhook at the kind network's gateway. Node objects that are not kind's (the fake nodes the
# tests make) are deleted first and again at the end, so every run, and whatever runs on the
# cluster next (make kind-install, kind-tidal), starts from the same cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
name=${KIND_CLUSTER:-homing}
kind=$root/e2e/.kind/bin/kind
bash "$root/e2e/kind/build-kind.sh"   # at its pin (a no-op once built)
kubeconfig=$root/e2e/.kind/kubeconfig
if [[ $name != homing ]]; then   # a kind cluster of the user's own (make kind-e2e KIND_CLUSTER=<name>)
  kubeconfig=$root/e2e/.kind/kubeconfig-$name
  "$kind" get kubeconfig --name "$name" >"$kubeconfig"
fi
kubectl=(kubectl_bin --kubeconfig "$kubeconfig")
kubectl_bin() { "$root/e2e/.bin/kubectl" "$@"; }

gateway=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -m1 '\.')
# An in-cluster homing (make kind-install, or kind-install-helm: the chart names its
# configuration after the release namespace) would decide the tests' pods as well as theirs.
if "${kubectl[@]}" get validatingwebhookconfiguration,mutatingwebhookconfiguration -o name 2>/dev/null | grep -qE '/homing$|/homing-system-homing$'; then
  echo "homing is installed in the cluster (make kind-install): remove it first, e.g." \
       "kubectl delete -k e2e/.kind/install or helm uninstall homing -n homing-system, or run make kind-e2e before make kind-install" >&2
  exit 1
fi
mapfile -t kind_nodes < <("$kind" get nodes --name "$name")
fake_nodes() {
  local stale
  mapfile -t stale < <("${kubectl[@]}" get nodes -o name | grep -vxF -f <(printf 'node/%s\n' "${kind_nodes[@]}") || true)
  if ((${#stale[@]})); then
    echo "deleting ${#stale[@]} Node objects $1"
    "${kubectl[@]}" delete "${stale[@]}" --wait=false >/dev/null
  fi
}
fake_nodes "left by an earlier run"
trap 'fake_nodes "the tests made"' EXIT

cd "$root"
HOMING_E2E_KUBECONFIG=$kubeconfig HOMING_E2E_WEBHOOK_HOST=$gateway \
  .venv/bin/python -m pytest -q -p no:cacheprovider --timeout 120 "$@"
