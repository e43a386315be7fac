#!/usr/bin/env bash
# Volcano on the kind cluster from its own manifest (installer/volcano-development.yaml, read
# from the module cache at the version e2e/volcano pins), with its own images where a registry
# answers, else with images built here: its three programs from e2e/build-volcano.sh on the
# Debian base (volcano/Dockerfile), whose names replace the manifest's, nothing else; loaded
# into the nodes either way. Then the scheduler
# configuration a user applies for the tidal day (manifests/tidal/preempt's ConfigMap, with the
# scheduler restarted when it changed), and a check that all three run and the webhook answers (a Job it rejects).
# Idempotent. Needs kind-up.sh's cluster. KUBECONFIG=e2e/.kind/kubeconfig.
set -euo pipefail
[[ -n ${HOMING_NICED:-} ]] || exec env HOMING_NICED=1 nice -n 15 bash "$0" "$@"
e2e=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$e2e/.." && pwd)
source "$e2e/images/lib.sh"
export DOCKER_BUILDKIT=0
name=${KIND_CLUSTER:-homing}
export KUBECONFIG=$e2e/.kind/kubeconfig
kind=$e2e/.kind/bin/kind
k=$e2e/.kind/bin/kubectl
bin=$e2e/.bin
say() { echo "volcano: $*" >&2; }

bash "$e2e/build-volcano.sh" webhook
version=$(awk '$1 == "volcano.sh/volcano" {print $2}' "$e2e/volcano/go.mod" | head -1)
[[ -n $version ]] || { say "no volcano.sh/volcano in e2e/volcano/go.mod"; exit 1; }
src=$(cd "$e2e/volcano" && go list -m -f '{{.Dir}}' volcano.sh/volcano)
manifest=$src/installer/volcano-development.yaml
secret_script=$src/installer/dockerfile/webhook-manager/gen-admission-secret.sh

# The manifest's own images where a registry answers (lib.sh, HOMING_IMAGES), loaded on every
# node; else one image per program built here, tagged by what it is made of, in their place.
ctx=$(mktemp -d "${TMPDIR:-/tmp}/homing-volcano.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
declare -A images upstream
for program in vc-scheduler vc-controller-manager vc-webhook-manager; do
  upstream[$program]=$(grep -o "image: *[^ ]*/$program:$version" "$manifest" | head -1 | sed 's/^image: *//')
  [[ -n ${upstream[$program]} ]] || { say "no $program:$version image in $(basename "$manifest")"; exit 1; }
done
if pulled "${upstream[vc-scheduler]}" && pulled "${upstream[vc-controller-manager]}" && pulled "${upstream[vc-webhook-manager]}"; then
  for program in "${!upstream[@]}"; do images[$program]=${upstream[$program]}; done
else
  bash "$e2e/images/build-base.sh"
  cp "$e2e/kind/volcano/Dockerfile" "$bin/vc-scheduler" "$bin/vc-controller-manager" "$bin/vc-webhook-manager" \
     "$e2e/.kind/bin/kubectl" "$secret_script" "$ctx/"
  hash=$( { (cd "$ctx" && sha256sum ./*); docker image inspect -f '{{.Id}}' homing-local/debian:bookworm; } | sha256sum | cut -c1-12)
  for program in vc-scheduler vc-controller-manager vc-webhook-manager; do
    images[$program]=homing-local/$program:$version-$hash
    if ! have_image "${images[$program]}"; then
      tar -c -C "$ctx" . | quiet_build --target "$program" --build-arg BIN="$program" -t "${images[$program]}" -
      say "built ${images[$program]}"
    fi
  done
fi
for program in vc-scheduler vc-controller-manager vc-webhook-manager; do
  "$kind" load docker-image "${images[$program]}" --name "$name" >/dev/null 2>&1 \
    || { say "FAILED: kind load docker-image ${images[$program]}"; exit 1; }
done

# Volcano's manifest with those images (present on every node: never pulled).
sed -e "s#${upstream[vc-scheduler]}#${images[vc-scheduler]}#" \
    -e "s#${upstream[vc-controller-manager]}#${images[vc-controller-manager]}#" \
    -e "s#${upstream[vc-webhook-manager]}#${images[vc-webhook-manager]}#" \
    -e "s#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#" "$manifest" >"$ctx/volcano.yaml"
[[ $(grep -c "image: " "$ctx/volcano.yaml") == $(grep -cE "image: *(${images[vc-scheduler]}|${images[vc-controller-manager]}|${images[vc-webhook-manager]})$" "$ctx/volcano.yaml") ]] \
  || { say "an image of the manifest is not one of the three"; grep -n "image: " "$ctx/volcano.yaml" >&2; exit 1; }
# The admission-init Job makes the webhook's certificate once (re-applying a completed one
# changes nothing); one that failed or runs an older image is deleted so that it runs again.
init_image=$("$k" -n volcano-system get job volcano-admission-init -o jsonpath='{.spec.template.spec.containers[0].image}' 2>/dev/null || true)
init_done=$("$k" -n volcano-system get job volcano-admission-init -o jsonpath='{.status.succeeded}' 2>/dev/null || true)
if [[ -n $init_image && ( $init_image != "${images[vc-webhook-manager]}" || $init_done != 1 ) ]]; then
  "$k" -n volcano-system delete job volcano-admission-init --wait=true >/dev/null
fi
"$k" apply --server-side --force-conflicts -f "$ctx/volcano.yaml" >/dev/null
say "applied $(basename "$manifest") of volcano.sh/volcano $version"
"$k" -n volcano-system wait --for=condition=complete job/volcano-admission-init --timeout=180s >/dev/null \
  || { "$k" -n volcano-system logs job/volcano-admission-init --tail=30 >&2 || true; say "FAILED: admission-init"; exit 1; }

# The tidal day's scheduler configuration (as manifests/tidal/preempt gives it), then a
# scheduler that has read it.
conf=$repo/manifests/tidal/preempt/volcano-scheduler.conf
"$k" -n volcano-system create configmap volcano-scheduler-configmap --from-file="$conf" --dry-run=client -o yaml \
  | "$k" apply --server-side --force-conflicts -f - >/dev/null
want=$("$k" -n volcano-system get configmap volcano-scheduler-configmap -o jsonpath='{.data.volcano-scheduler\.conf}' | sha256sum | cut -c1-12)
if [[ $("$k" -n volcano-system get deployment volcano-scheduler -o jsonpath='{.spec.template.metadata.annotations.homing\.io/scheduler-conf}') != "$want" ]]; then
  "$k" -n volcano-system patch deployment volcano-scheduler --type=merge \
    -p "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{\"homing.io/scheduler-conf\":\"$want\"}}}}}" >/dev/null
fi
for d in volcano-admission volcano-controllers volcano-scheduler; do
  "$k" -n volcano-system rollout status "deployment/$d" --timeout=180s >/dev/null \
    || { "$k" -n volcano-system logs "deployment/$d" --tail=30 >&2 || true; say "FAILED: $d"; exit 1; }
done
say "scheduler, controllers and admission running: $("$k" -n volcano-system get pods --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.metadata.name}@{.spec.nodeName} {end}')"

# The webhook answers: Volcano's validation refuses a Job whose minAvailable exceeds its replicas.
for _ in $(seq 60); do
  out=$("$k" create --dry-run=server -f - 2>&1 <<'JOB' || true
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: volcano-webhook-probe, namespace: default}
spec:
  minAvailable: 3
  schedulerName: volcano
  tasks:
  - name: t
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: none}]
JOB
)
  [[ $out == *"minAvailable"* ]] && break
  sleep 2
done
[[ $out == *"minAvailable"* ]] || { say "FAILED: the admission webhook did not refuse an invalid Job: $out"; exit 1; }
say "admission webhook validates Jobs"
