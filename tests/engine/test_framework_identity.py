"""behaviour.md "Identity" and 1.2 for each framework, from pods exactly as its controller writes them
(homing_e2e/framework_pods.py says where in each controller's source): the owner they are
kept under and the rank they get, with the watch caches live, not yet filled, or absent."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from homing.engine.identity import WorkloadIndex, resolve_owner, resolve_rank
from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND
from homing.engine.model import OwnerRef
from homing_e2e import framework_pods as fp

NS = "team-a"
BOUND = 1_000_000

LWS = OwnerRef(api_version="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet", name="vllm", namespace=NS, uid="lws-uid")
JOBSET = OwnerRef(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name="train", namespace=NS, uid="js-uid")
TRAIN_JOBSET = OwnerRef(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name="llama", namespace=NS, uid="tjs-uid")
TRAINJOB = OwnerRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="llama", namespace=NS, uid="tj-uid")


def _index(live: tuple[str, ...] = (LWS_KIND, JOBSET_KIND), known: bool = True) -> WorkloadIndex:
    workloads = WorkloadIndex()
    fw = workloads.frameworks
    fw.live.update(live)
    if known:
        fw.learn_leaderworkerset(LWS)
        fw.learn_jobset(JOBSET, None)
        fw.learn_jobset(TRAIN_JOBSET, TRAINJOB)
    return workloads


@dataclass
class Case:
    pod: dict
    owner: tuple[str, str, str] | None  # kind, name, uid
    rank: str | None
    workloads: WorkloadIndex = field(default_factory=_index)


CASES = [
    # LeaderWorkerSet: the worker's controller is a StatefulSet the leader pod owns.
    pytest.param(Case(fp.lws_worker(NS, "vllm", 1, 2, "worker-sts-uid"), ("LeaderWorkerSet", "vllm", "lws-uid"), "1/2"),
                 id="lws-worker"),
    pytest.param(Case(fp.lws_leader(NS, "vllm", 1, "leader-sts-uid"), ("LeaderWorkerSet", "vllm", "lws-uid"), "1/0"),
                 id="lws-leader"),
    pytest.param(Case(fp.lws_worker(NS, "vllm", 3, 1, "sts", webhooked=False), ("LeaderWorkerSet", "vllm", "lws-uid"),
                      "3/1"), id="lws-worker-before-lws-webhook"),
    pytest.param(Case(fp.lws_leader(NS, "vllm", 3, "sts", webhooked=False), ("LeaderWorkerSet", "vllm", "lws-uid"),
                      "3/0"), id="lws-leader-before-lws-webhook"),
    pytest.param(Case(fp.lws_worker(NS, "vllm", 1, 2, "sts"), None, "1/2", _index(known=False)),
                 id="lws-not-seen-yet-untracked"),
    pytest.param(Case(fp.lws_worker(NS, "other", 1, 2, "sts"), None, "1/2"), id="lws-of-another-name-untracked"),
    pytest.param(Case(fp.lws_worker(NS, "vllm", 1, 2, "worker-sts-uid"), ("StatefulSet", "vllm-1", "worker-sts-uid"),
                      "1/2", _index(live=(), known=False)), id="lws-crd-absent-controller-as-is"),
    # JobSet: Job -> JobSet from the JobSet's own labels, confirmed by the JobSet watch.
    pytest.param(Case(fp.jobset_pod(NS, "train", "js-uid", "workers", 1, 3, "job-uid"), ("JobSet", "train", "js-uid"),
                      "workers/1/3"), id="jobset"),
    pytest.param(Case(fp.jobset_pod(NS, "train", "js-uid", "driver", 0, 0, "job-uid"), ("JobSet", "train", "js-uid"),
                      "driver/0/0"), id="jobset-other-replicated-job"),
    pytest.param(Case(fp.jobset_pod(NS, "train", "js-uid", "workers", 1, 3, "job-uid"), None, "workers/1/3",
                      _index(known=False)), id="jobset-not-seen-yet-untracked"),
    pytest.param(Case(fp.jobset_pod(NS, "train", "js-uid", "workers", 0, 0, "job-uid"), ("JobSet", "train", "js-uid"),
                      "workers/0/0", _index(live=(), known=False)), id="jobset-crd-absent-from-labels"),
    pytest.param(Case(fp.jobset_pod(NS, "train", "forged-uid", "workers", 0, 0, "job-uid"), None, "workers/0/0"),
                 id="jobset-uid-label-not-a-known-jobset"),
    pytest.param(Case(fp.jobset_pod(NS, "llama", "js-uid", "workers", 0, 0, "job-uid"), None, "workers/0/0"),
                 id="jobset-name-label-not-its-uid"),
    # TrainJob: the JobSet it runs on is controlled by it.
    pytest.param(Case(fp.trainjob_pod(NS, "llama", "tjs-uid", 0, 5, "job-uid"), ("TrainJob", "llama", "tj-uid"),
                      "node/0/5"), id="trainjob"),
    pytest.param(Case(fp.trainjob_pod(NS, "llama", "tjs-uid", 0, 5, "job-uid"), ("JobSet", "llama", "tjs-uid"),
                      "node/0/5", _index(live=(), known=False)), id="trainjob-crd-absent-stops-at-jobset"),
    # Kubeflow training operator: the job owns its pods directly.
    pytest.param(Case(fp.pytorchjob_pod(NS, "bert", "pj-uid", "Master", 0), ("PyTorchJob", "bert", "pj-uid"),
                      "master/0"), id="pytorchjob-master"),
    pytest.param(Case(fp.pytorchjob_pod(NS, "bert", "pj-uid", "Worker", 7), ("PyTorchJob", "bert", "pj-uid"),
                      "worker/7"), id="pytorchjob-worker"),
    pytest.param(Case(fp.mpijob_launcher(NS, "hvd", "mpi-uid"), ("MPIJob", "hvd", "mpi-uid"), None),
                 id="mpijob-launcher-rankless"),
    # KubeRay: rankless, under the RayCluster.
    pytest.param(Case(fp.ray_worker(NS, "rc", "rc-uid", "gpu-group"), ("RayCluster", "rc", "rc-uid"), None),
                 id="ray-worker"),
]


@pytest.mark.parametrize("case", CASES)
def test_framework_pod_owner_and_rank(case: Case) -> None:
    owner = resolve_owner(case.pod, case.workloads)
    if case.owner is None:
        assert owner is None
    else:
        assert owner is not None and (owner.kind, owner.name, owner.uid) == case.owner
        assert owner.namespace == NS
    kind = owner.kind if owner else case.pod["metadata"]["ownerReferences"][0]["kind"]
    result = resolve_rank(case.pod, kind, BOUND)
    assert result.warning is None
    assert (result.rank.key if result.rank else None) == case.rank


def test_lws_group_restart_keeps_the_owner() -> None:
    """The group restart's new worker StatefulSet (new UID) changes nothing: same owner, same rank."""
    workloads = _index()
    before = fp.lws_worker(NS, "vllm", 0, 1, "sts-before-restart")
    after = fp.lws_worker(NS, "vllm", 0, 1, "sts-after-restart")
    assert resolve_owner(before, workloads) == resolve_owner(after, workloads) == LWS


def test_recreated_jobset_job_keeps_the_owner() -> None:
    """A failed JobSet's Jobs are recreated with new UIDs (restart-attempt goes up)."""
    workloads = _index()
    before = fp.jobset_pod(NS, "train", "js-uid", "workers", 1, 0, "job-uid-1", restarts=0)
    after = fp.jobset_pod(NS, "train", "js-uid", "workers", 1, 0, "job-uid-2", restarts=1)
    assert resolve_owner(before, workloads) == resolve_owner(after, workloads) == JOBSET
    assert resolve_rank(before, "JobSet", BOUND).rank == resolve_rank(after, "JobSet", BOUND).rank


def test_another_namespace_cannot_reach_the_cache() -> None:
    pod = fp.lws_worker("team-b", "vllm", 0, 1, "sts")
    assert resolve_owner(pod, _index()) is None
    pod = fp.jobset_pod("team-b", "train", "js-uid", "workers", 0, 0, "job")
    assert resolve_owner(pod, _index()) is None


def test_recreated_lws_of_the_same_name_replaces_the_old_one() -> None:
    workloads = _index()
    fw = workloads.frameworks
    new = LWS.model_copy(update={"uid": "lws-uid-2"})
    fw.learn_leaderworkerset(new)
    fw.forget_leaderworkerset(NS, "vllm", LWS.uid)  # the old one's deletion, seen late
    assert resolve_owner(fp.lws_leader(NS, "vllm", 0, "sts"), workloads) == new
    fw.forget_leaderworkerset(NS, "vllm", new.uid)
    assert resolve_owner(fp.lws_leader(NS, "vllm", 0, "sts"), workloads) is None


def test_deleted_jobset_is_forgotten() -> None:
    workloads = _index()
    workloads.frameworks.forget_jobset(NS, TRAIN_JOBSET.uid)
    assert resolve_owner(fp.trainjob_pod(NS, "llama", "tjs-uid", 0, 0, "job"), workloads) is None
    assert (NS, TRAIN_JOBSET.uid) not in workloads.frameworks.trainjobs and workloads.frameworks.trainjobs


@pytest.mark.parametrize(
    "labels, what",
    [
        pytest.param({"jobset.sigs.k8s.io/replicatedjob-name": "w" * 60}, "63 characters", id="jobset-key-too-long"),
        pytest.param({"jobset.sigs.k8s.io/job-index": "-1"}, "job-index", id="jobset-negative-job-index"),
        pytest.param({"training.kubeflow.org/replica-index": "x"}, "replica-index", id="kubeflow-non-numeric"),
        pytest.param({"training.kubeflow.org/replica-type": "a/b"}, "replica-type", id="kubeflow-type-with-separator"),
    ],
)
def test_malformed_framework_rank_is_rankless_with_warning(labels: dict, what: str) -> None:
    pod = (fp.pytorchjob_pod(NS, "bert", "u", "Worker", 1) if "training.kubeflow.org/replica-index" in labels
           or "training.kubeflow.org/replica-type" in labels else fp.jobset_pod(NS, "train", "js-uid", "w", 0, 0, "j"))
    pod["metadata"]["labels"].update(labels)
    result = resolve_rank(pod, "JobSet", BOUND)
    assert result.rank is None and what in result.warning


def test_nonindexed_jobset_job_is_rankless() -> None:
    pod = fp.jobset_pod(NS, "train", "js-uid", "workers", 0, 0, "job")
    for where in ("labels", "annotations"):
        del pod["metadata"][where]["batch.kubernetes.io/job-completion-index"]
    result = resolve_rank(pod, "JobSet", BOUND)
    assert result.rank is None and result.warning is None
