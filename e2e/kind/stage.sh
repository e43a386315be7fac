#!/usr/bin/env bash
# The real-cluster half of `make test` (docs/kind.md), in an order where each step finds what it
# needs: kind up; tests/integration through its kubeconfig before homing is installed in it (an
# in-cluster homing would decide the tests' pods too); homing by `kubectl apply -k`, checked;
# real image pulls timed; Volcano and the tide on real kubelets; homing again by `helm install`,
# checked; then from the release's artifacts alone (two releases, doctor, uninstall). The
# cluster is deleted at the end, pass or fail, unless KIND_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ ${KIND_KEEP:-0} == 1 ]] || trap 'make --no-print-directory kind-down || true' EXIT
# A test run's pull and tide figures stay out of bench/results (what the docs quote); `make
# kind-pulls` or `make kind-tidal` on their own are the benchmarks and write there.
export HOMING_KIND_RESULTS=${HOMING_KIND_RESULTS:-$PWD/e2e/.kind/results}
start=$SECONDS
make --no-print-directory kind-up
# A kept cluster whose API server is gone (as after a machine restart): made anew, not reused.
docker stop "${KIND_CLUSTER:-homing}-control-plane" >/dev/null
t=$SECONDS
KIND_REUSE_WAIT=10 make --no-print-directory kind-up
echo "stage: a dead kept cluster made anew in $((SECONDS - t)) s" >&2
# Up again with no kubeconfig here, as a fresh clone finds a cluster kept by another checkout:
# the cluster is reused and its kubeconfig written anew.
rm -f e2e/.kind/kubeconfig
for target in kind-up kind-e2e kind-install kind-pulls kind-tidal kind-install-helm kind-release; do
  t=$SECONDS
  make --no-print-directory "$target"
  echo "stage: make $target took $((SECONDS - t)) s" >&2
done
echo "stage: the kind stage passed in $((SECONDS - start)) s" >&2
