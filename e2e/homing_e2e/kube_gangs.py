"""kube-scheduler 1.37's own gangs on a tidal cluster (docs/scheduler-settings.md): the
switches its control plane needs, a training job as an Indexed Job whose pods join a
PodGroup, and the gang disruptions counted from the pods (kube-scheduler keeps no count)."""
from __future__ import annotations

RELEASE = "k8s-1.37"  # the folder of e2e/.bin built from e2e/controlplane-1.37
GATES = "--feature-gates=GenericWorkload=true"  # gang scheduling and workload-aware preemption: one beta gate
APISERVER_ARGS = (GATES, "--runtime-config=scheduling.k8s.io/v1beta1=true",  # Workload and PodGroup
                  "--endpoint-reconciler-type=none")  # 1.37 refuses to publish a loopback address as the kubernetes Service's
CONTROLLER_MANAGER_ARGS = (GATES,)
# Two replicas whose preemptions share victims (a gang evicted whole) can both see the
# victims go while their preemption is still in flight, and then wait for an event that
# never comes: kube-scheduler 1.37 retries them only when its unschedulable queue is
# flushed (5 min by default). The harness flushes it sooner so a run measures placement.
SCHEDULER_ARGS = (GATES, "--pod-max-in-unschedulable-pods-duration=10s")
JOB_NAME, COMPLETION_INDEX = "batch.kubernetes.io/job-name", "batch.kubernetes.io/job-completion-index"
LOSS_GAP_S = 10.0  # a job's ranks lost within this of each other were lost in one disruption
DISRUPTION_MODES = ("all", "single")  # the PodGroup evicted as one unit, or pod by pod


PODGROUPS_PATH = "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups"


def pod_group(name: str, namespace: str, ranks: int, priority_class: str, disruption: str = "all") -> dict:
    """A gang of `ranks`: scheduled all or nothing; `disruption` "all" makes preemption
    evict it whole, as a training job that cannot lose one rank needs."""
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": ranks}}, "disruptionMode": {disruption: {}},
                     "priorityClassName": priority_class}}


def indexed_job(name: str, namespace: str, ranks: int, pod_spec: dict, annotations: dict[str, str]) -> dict:
    """An Indexed Job whose pods join the PodGroup of the same name. A rank evicted by
    preemption or a node's fault is re-created without counting against its limit, after
    its own index's back-off (10 s, doubling with each eviction of that rank): the Job-wide
    back-off counts ignored failures too, and one whole-gang eviction set it to 10 minutes."""
    spec = {**pod_spec, "restartPolicy": "Never", "schedulingGroup": {"podGroupName": name}}
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
        "spec": {"completions": ranks, "parallelism": ranks, "completionMode": "Indexed", "backoffLimitPerIndex": 1000,
                 "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                 "template": {"metadata": {"annotations": annotations}, "spec": spec}},
    }


def rank_of(meta: dict) -> tuple[str, str] | None:
    """(job, completion index) of an Indexed Job's pod, from what the Job controller writes."""
    labels, ann = meta.get("labels") or {}, meta.get("annotations") or {}
    job = labels.get(JOB_NAME) or labels.get("job-name")
    index = ann.get(COMPLETION_INDEX) or labels.get(COMPLETION_INDEX)
    return (job, index) if job and index is not None else None


def disruptions(loss_times: list[float], gap: float = LOSS_GAP_S) -> int:
    """How many times a job was disrupted, from the moments it lost a bound rank."""
    count, last = 0, float("-inf")
    for at in sorted(loss_times):
        if at - last > gap:
            count += 1
        last = at
    return count
