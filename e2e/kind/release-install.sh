#!/usr/bin/env bash
# homing installed on the kind cluster from the release's artifacts alone, as a platform team
# would from a release page (docs/dev/release.md): `make release`'s chart package and install.yaml,
# checked against their SHA256SUMS and used from a folder outside the checkout.
#   1. the chart package into a namespace `--create-namespace` makes, with a values file that
#      sets resources, nodeSelector, tolerations and imagePullSecrets (release-values.yaml);
#   2. a second release in another namespace beside it (the chart's second-release example);
#   3. `kubectl homing doctor` passes on both, then fails naming the admission check once the
#      first release's caBundle is replaced by hand (its periodic repair set to an hour here);
#   4. `helm uninstall` of both leaves only what docs/helm.md "Uninstall" says it keeps;
#   5. `kubectl apply -f install.yaml` the same way: ready, doctor passes, deleted.
# The image is the one `make images` built (the release's Dockerfile), tagged with the version:
# building the release's own images here takes QEMU's minutes for arm64 (`make release`).
# Runs after install.sh on the same cluster and replaces its install. KUBECONFIG=e2e/.kind/kubeconfig.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
name=${KIND_CLUSTER:-homing}
export KUBECONFIG=$e2e/.kind/kubeconfig
kind=$e2e/.kind/bin/kind k=$e2e/.kind/bin/kubectl helm=$e2e/.bin/helm
doctor=$repo/.venv/bin/kubectl-homing
say() { echo "release-install: $*" >&2; }
fail() { say "FAILED: $*"; "$k" get pods -A -l app.kubernetes.io/name=homing -o wide >&2 || true; exit 1; }

version=$("$repo/.venv/bin/python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
dist=$(mktemp -d /tmp/homing-release-XXXXXX)
trap 'rm -rf "$dist"' EXIT
"$repo/.venv/bin/python" "$e2e/release/release.py" "$version" --platforms '' --dist "$dist/artifacts" >/dev/null
cd "$dist/artifacts"
sha256sum --quiet -c SHA256SUMS || fail "SHA256SUMS"
chart=$dist/artifacts/homing-$version.tgz install=$dist/artifacts/install.yaml
say "artifacts of $version: $(ls | tr '\n' ' ')"

image=$(bash "$e2e/images/build-images.sh")
docker tag "$image" "homing:$version"
"$kind" load docker-image "homing:$version" --name "$name" >/dev/null

# The stage's earlier installs go first: their webhooks serve the same namespaces.
if "$k" -n homing-system get deployment homing >/dev/null 2>&1; then
  if [[ $("$k" -n homing-system get deployment homing -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}') == Helm ]]; then
    "$helm" uninstall homing -n homing-system --wait >/dev/null
  else
    "$k" delete -k "$e2e/.kind/install" -l app.kubernetes.io/name=homing --ignore-not-found --wait=true >/dev/null
  fi
  say "removed the stage's earlier install from homing-system"
fi

rolled_out() {  # namespace
  "$k" -n "$1" rollout status deployment/homing --timeout=180s >/dev/null || fail "homing in $1 did not roll out"
  [[ $("$k" -n "$1" get deployment homing -o jsonpath='{.status.readyReplicas}') == 2 ]] || fail "homing in $1: not 2 replicas ready"
}
opted_in() {  # namespace label=value
  "$k" create namespace "$1" --dry-run=client -o yaml | "$k" apply -f - >/dev/null
  "$k" label namespace "$1" "$2" --overwrite >/dev/null
}
# Once the install has settled: a replica leads and has written its caBundle. Where an earlier
# install's Lease is left (docs/helm.md "Uninstall"), the first leader waits out that Lease's
# duration by its own clock (client-go's rule, engine/replicas/leadership.py) first.
doctor_passes() {  # operator namespace, pods' namespace
  local out i passed=0
  for i in $(seq 30); do
    if out=$("$doctor" doctor -n "$2" --operator-namespace "$1" 2>&1); then passed=1; break; fi
    sleep 2
  done
  ((passed)) || { echo "$out" >&2; fail "doctor failed on the install in $1 for a minute"; }
  say "doctor passes on the install in $1 (pods of $2)"
}
# What a release made that must be gone after `helm uninstall`: its namespaced objects and the
# cluster-scoped ones named after its namespace.
gone() {  # release namespace
  local left
  left=$("$k" -n "$1" get deployment,service,configmap,serviceaccount,role,rolebinding,poddisruptionbudget,networkpolicy \
           -l app.kubernetes.io/instance=homing -o name 2>/dev/null)
  left+=$("$k" get mutatingwebhookconfiguration,clusterrole,clusterrolebinding,priorityclass,validatingadmissionpolicy,validatingadmissionpolicybinding \
           -o name 2>/dev/null | grep -F "/$1-homing" || true)
  [[ -z $left ]] || fail "left after helm uninstall in $1: $left"
  # docs/helm.md "Uninstall": the operator's own Secret and Leases stay, and the CRD.
  "$k" -n "$1" get secret homing-webhook-tls >/dev/null 2>&1 || fail "the operator's Secret in $1 is gone, unlike docs/helm.md says"
  "$k" get crd placementmemories.homing.io >/dev/null || fail "the CRD went with the release"
}

# 1. The package, a namespace it makes, a values file.
"$helm" install homing "$chart" -n homing-a --create-namespace -f "$e2e/kind/release-values.yaml" >/dev/null
rolled_out homing-a
pod=$("$k" -n homing-a get pods -l app.kubernetes.io/name=homing -o jsonpath='{.items[0].spec}')
for want in '"imagePullSecrets":[{"name":"homing-pull"}]' '"kubernetes.io/os":"linux"' '"memory":"384Mi"' '"key":"homing.example/platform"'; do
  [[ $pod == *"$want"* ]] || fail "the values file's $want is not in homing-a's pods"
done
say "helm install of homing-$version.tgz in homing-a (made by --create-namespace), the values in its pods"

# 2. A second release beside it, serving its own shard.
"$helm" install homing "$chart" -n homing-b --create-namespace -f "$repo/charts/homing/examples/second-release.yaml" >/dev/null
rolled_out homing-b
say "a second release in homing-b, ready beside the first"

# 3. doctor on both; then on a CA broken by hand.
opted_in homing-release-a homing.io/enabled=true
opted_in homing-release-b homing.io/shard=team-b
doctor_passes homing-a homing-release-a
doctor_passes homing-b homing-release-b
other=$(openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /dev/null -subj /CN=not-homing -days 1 2>/dev/null | base64 -w0)
n=$("$k" get mutatingwebhookconfiguration homing-a-homing -o jsonpath='{.webhooks[*].name}' | wc -w)
ops=$(for ((i = 0; i < n; i++)); do printf '{"op":"replace","path":"/webhooks/%d/clientConfig/caBundle","value":"%s"},' "$i" "$other"; done)
"$k" patch mutatingwebhookconfiguration homing-a-homing --type=json -p "[${ops%,}]" >/dev/null
if out=$("$doctor" doctor -n homing-release-a --operator-namespace homing-a -o json 2>&1); then
  fail "doctor passed with homing-a's caBundle replaced by hand"
fi
echo "$out" | "$repo/.venv/bin/python" -c '
import json, sys
checks = {c["name"]: c for c in json.load(sys.stdin)["checks"]}
a = checks["admission"]
assert a["ok"] is False and "caBundle" in a["fix"], a
' || { echo "$out" >&2; fail "doctor did not name the admission check and the caBundle"; }
say "doctor fails on homing-a's replaced caBundle, naming the admission check and the caBundle"

# 4. Uninstalled, each leaves what docs/helm.md says and nothing else.
for ns in homing-a homing-b; do
  "$helm" uninstall homing -n "$ns" --wait >/dev/null
  gone "$ns"
done
say "helm uninstall of both left only the CRD, the operator's Secret and Leases"
"$k" delete namespace homing-a homing-b homing-release-b --wait=false >/dev/null

# 5. install.yaml the same way.
"$k" apply -f "$install" >/dev/null
rolled_out homing-system
doctor_passes homing-system homing-release-a
"$k" delete -f "$install" -l app.kubernetes.io/name=homing --wait=true >/dev/null
"$k" delete namespace homing-release-a --wait=false >/dev/null
say "kubectl apply -f install.yaml: ready, doctor passes; deleted"
