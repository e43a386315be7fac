#!/usr/bin/env bash
# Installs homing on the kind cluster of kind-up.sh as a user would: the image of `make images`
# loaded with `kind load docker-image`, then `kubectl apply -k` of install/ (the project's
# manifests, image overridden), or with `install.sh helm`: `helm install` of charts/homing with
# the same image, release homing in homing-system (either one replaces the other: both run
# homing there, under the same names but for the cluster-scoped ones, which the chart names
# homing-system-homing...). Then checks what an install must give: both replicas Ready
# (kubelet probes), Pod Security "restricted" enforced on homing-system, the webhook
# configuration carrying the operator's CA, a decision on an accelerator pod, a deleted
# StatefulSet rank coming back to its node, and no admission and no memory lost during a rolling
# restart of homing and the drain of a node under one replica. Idempotent. KUBECONFIG=e2e/.kind/kubeconfig.
set -euo pipefail
e2e=$(cd "$(dirname "$0")/.." && pwd)
how=${1:-kustomize}
[[ $how == kustomize || $how == helm ]] || { echo "usage: install.sh [kustomize|helm]" >&2; exit 2; }
helm=$e2e/.bin/helm      # e2e/build-helm.sh (make kind-install-helm builds it)
name=${KIND_CLUSTER:-homing}
export KUBECONFIG=$e2e/.kind/kubeconfig
kind=$e2e/.kind/bin/kind
k=$e2e/.kind/bin/kubectl
ns=homing-system demo=homing-demo
resource=huawei.com/Ascend910
say() { echo "install: $*" >&2; }
fail() { say "FAILED: $*"; "$k" -n $ns get pods -o wide >&2 || true; exit 1; }

image=$(bash "$e2e/images/build-images.sh")          # homing:<hash>, reused when present
tag=${image#homing:}
"$kind" load docker-image "$image" --name "$name" >/dev/null

# install/ with the content-hashed tag on top (a generated overlay, git-ignored).
over=$e2e/.kind/install
mkdir -p "$over"
cat >"$over/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../kind/install
images:
- name: homing
  newTag: "$tag"
YAML
helm_owned() { [[ $("$k" -n $ns get deployment homing -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}' 2>/dev/null) == Helm ]]; }
# The namespace the release record is in (an older chart's release lived in default).
release_ns() { "$k" -n $ns get deployment homing -o jsonpath='{.metadata.annotations.meta\.helm\.sh/release-namespace}'; }
if [[ $how == kustomize ]]; then
  if helm_owned; then say "removing the Helm release first"; "$helm" uninstall homing --namespace "$(release_ns)" --wait >/dev/null; fi
  "$k" apply -k "$over" >/dev/null
  say "applied install/ with $image"
  hook=homing
else
  if "$k" -n $ns get deployment homing >/dev/null 2>&1 && ! helm_owned; then
    say "removing the kubectl apply -k install first"
    "$k" delete -k "$over" --ignore-not-found --wait=true >/dev/null
  elif helm_owned && [[ $(release_ns) != "$ns" ]]; then
    say "removing the release of the earlier chart (recorded in $(release_ns)) first"
    "$helm" uninstall homing --namespace "$(release_ns)" --wait >/dev/null
  fi
  # The chart makes no namespace: made here with the Pod Security labels the kustomize
  # install's namespace.yaml carries (docs/helm.md), then the release in it.
  "$k" create namespace $ns --dry-run=client -o yaml | "$k" apply -f - >/dev/null
  "$k" label namespace $ns --overwrite >/dev/null \
    pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest \
    pod-security.kubernetes.io/warn=restricted pod-security.kubernetes.io/audit=restricted
  "$helm" upgrade --install homing "$e2e/../charts/homing" --namespace $ns \
    --set image.repository=homing --set image.tag="$tag" >/dev/null
  say "helm installed charts/homing with $image"
  hook=$ns-homing  # the chart's cluster-scoped names carry the release namespace
fi
# Rolled out, or failed early: a crash-looping replica shows its last log.
for i in $(seq 150); do
  "$k" -n $ns rollout status deployment/homing --timeout=1s >/dev/null 2>&1 && break
  # (only the current revision's pods: an earlier one's may be crash-looping on their way out)
  rev=$("$k" -n $ns get deployment homing -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}')
  hash=$("$k" -n $ns get rs -l app.kubernetes.io/name=homing -o jsonpath="{.items[?(@.metadata.annotations.deployment\.kubernetes\.io/revision==\"$rev\")].metadata.labels.pod-template-hash}")
  for p in $("$k" -n $ns get pods -l "pod-template-hash=$hash" -o jsonpath='{range .items[*]}{.metadata.name}={.status.containerStatuses[0].restartCount}{" "}{end}'); do
    n=${p#*=}  # empty while the pod has no container status yet (Pending)
    (( ${n:-0} < 2 )) || { "$k" -n $ns logs "${p%=*}" --previous --tail=20 >&2 || true; fail "${p%=*} keeps restarting"; }
  done
  sleep 2
done
"$k" -n $ns rollout status deployment/homing --timeout=1s >/dev/null || fail "rollout"
ready=$("$k" -n $ns get deployment homing -o jsonpath='{.status.readyReplicas}')
[[ $ready == 2 ]] || fail "$ready of 2 replicas ready"
say "2 replicas ready on $("$k" -n $ns get pods -l app.kubernetes.io/name=homing -o jsonpath='{.items[*].spec.nodeName}')"

# Pod Security: the namespace's label is enforced (a privileged pod is refused, server-side).
[[ $("$k" get ns $ns -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}') == restricted ]] \
  || fail "namespace not labelled restricted"
if "$k" -n $ns run psa-probe --image="$image" --restart=Never --dry-run=server \
     --overrides='{"spec":{"containers":[{"name":"p","image":"'"$image"'","securityContext":{"privileged":true}}]}}' \
     >/dev/null 2>&1; then fail "a privileged pod was admitted to $ns"; fi
say "Pod Security restricted enforced on $ns"

# The operator patches its CA into the webhook configuration (the manifest ships none).
for i in $(seq 60); do
  ca=$("$k" get mutatingwebhookconfiguration "$hook" -o jsonpath='{.webhooks[*].clientConfig.caBundle}')
  [[ -n $ca ]] && break; sleep 2
done
[[ -n $ca ]] || fail "no caBundle in the webhook configuration"
say "webhook configuration has the operator's CA ($(echo "${ca%% *}" | base64 -d | openssl x509 -noout -subject 2>/dev/null || echo '?'))"

# Kind nodes have no NPUs: the workers advertise 8 each (node status capacity, as a device
# plugin would), so accelerator pods can schedule, and a returning rank has a choice of nodes.
for worker in $("$k" get nodes -l '!node-role.kubernetes.io/control-plane' -o name); do
  "$k" patch "$worker" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"$resource\":\"8\"}}}" >/dev/null
  for i in $(seq 30); do
    [[ $("$k" get "$worker" -o jsonpath="{.status.allocatable.huawei\.com/Ascend910}") == 8 ]] && break; sleep 1
  done
  say "${worker#node/} advertises $resource: 8"
done

# A StatefulSet of two ranks asking for NPUs, in a namespace homing serves.
"$k" create namespace $demo --dry-run=client -o yaml | "$k" apply -f - >/dev/null
"$k" label namespace $demo homing.io/enabled=true --overwrite >/dev/null
"$k" -n $demo apply -f "$e2e/kind/rank-statefulset.yaml" >/dev/null
"$k" -n $demo rollout status statefulset/ranks --timeout=180s >/dev/null || fail "ranks did not start"
decision=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.metadata.annotations.homing\.io/decision}')
[[ -n $decision ]] || fail "ranks-1 has no homing.io/decision"
say "ranks-1 decision: $decision"
node=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.spec.nodeName}')

# Homing's point: the deleted rank comes back to its node, asked for by the home term.
uid=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.metadata.uid}')
"$k" -n $demo delete pod ranks-1 --wait=true >/dev/null
for i in $(seq 90); do
  new=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
  [[ -n $new && $new != "$uid" ]] && break; sleep 1
done
"$k" -n $demo wait --for=condition=Ready pod/ranks-1 --timeout=120s >/dev/null || fail "ranks-1 did not come back"
back=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.spec.nodeName}')
decision=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.metadata.annotations.homing\.io/decision}')
home=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution}')
say "ranks-1 again: decision $decision"
say "ranks-1 preferred terms: $home"
[[ $back == "$node" ]] || fail "ranks-1 was on $node, came back on $back"
[[ $home == *"$node"* ]] || fail "ranks-1's terms do not name its home $node"
say "ranks-1 came back to its home $node"

# ranks-1 leaves before the rollover (scale to 1): the replicas that come next never see it
# live, so only PlacementMemory can send it home when the StatefulSet scales back.
"$k" -n $demo scale statefulset/ranks --replicas=1 >/dev/null
"$k" -n $demo wait --for=delete pod/ranks-1 --timeout=120s >/dev/null || fail "ranks-1 did not go at scale-in"

# No admission lost while homing rolls over and a node under one replica is drained: pods
# asked for the whole time (server-side dry runs: the webhook answers them as it answers a
# creation) each carry homing's decision. failurePolicy Ignore would let them in without one
# if no replica answered, which is what this would catch.
victim=$("$k" -n $ns get pods -l app.kubernetes.io/name=homing -o jsonpath='{.items[0].spec.nodeName}')
"$k" -n $ns rollout restart deployment/homing >/dev/null
"$k" drain "$victim" --ignore-daemonsets --delete-emptydir-data --timeout=180s >/dev/null 2>&1 &
drained=$!
# A pod with no controller is nobody's rank: homing leaves it alone. A ConfigMap stands in
# for the controller, as in the tests.
"$k" -n $demo create configmap probe-owner --dry-run=client -o yaml | "$k" apply -f - >/dev/null
owner=$("$k" -n $demo get configmap probe-owner -o jsonpath='{.metadata.uid}')
overrides='{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"probe-owner","uid":"'"$owner"'","controller":true}]},'
overrides+='"spec":{"containers":[{"name":"p","image":"homing:local","resources":{"limits":{"'"$resource"'":"1"}}}]}}'
asked=0 lost=0
for i in $(seq 400); do
  got=$("$k" -n $demo run "probe-$i" --image=homing:local --restart=Never --dry-run=server \
        --overrides="$overrides" -o jsonpath='{.metadata.annotations.homing\.io/decision}' 2>/dev/null || echo "")
  asked=$((asked + 1))
  [[ -n $got ]] || lost=$((lost + 1))
  if ((asked >= 30)) && ! kill -0 $drained 2>/dev/null \
     && "$k" -n $ns rollout status deployment/homing --timeout=1s >/dev/null 2>&1; then break; fi
done
wait $drained || fail "kubectl drain $victim did not finish"
"$k" uncordon "$victim" >/dev/null
"$k" -n $ns rollout status deployment/homing --timeout=120s >/dev/null || fail "the rolling restart did not finish"
((lost == 0)) || fail "$lost of $asked pods asked for during the rollout and the drain had no decision"
say "rolling restart and drain of $victim: $asked pods asked for meanwhile, every one answered by homing"

# No memory lost either: both replicas started after ranks-1 went, and it comes back home.
"$k" -n $demo scale statefulset/ranks --replicas=2 >/dev/null
"$k" -n $demo wait --for=condition=Ready pod/ranks-1 --timeout=120s >/dev/null || fail "ranks-1 did not come back after the rollover"
back=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.spec.nodeName}')
decision=$("$k" -n $demo get pod ranks-1 -o jsonpath='{.metadata.annotations.homing\.io/decision}')
say "ranks-1 after the rollover: $decision"
[[ $decision == *'"reason":"home"'* ]] || fail "ranks-1's decision after the rollover is not home: $decision"
[[ $back == "$node" ]] || fail "ranks-1 was on $node, came back on $back after the rollover"
say "ranks-1 went home to $node after the rollover: the memory came through PlacementMemory"
echo "homing $image installed ($how) on kind cluster $name: export KUBECONFIG=$KUBECONFIG"
