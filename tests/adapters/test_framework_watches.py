"""The LeaderWorkerSet and JobSet watches feed the identity caches (behaviour.md "Identity"): a listing
makes a cache live, a re-list that lacks an object forgets it, and a JobSet's TrainJob
controller is what its pods are lifted to."""
from __future__ import annotations

from homing.config import Settings
from homing.engine.identity import resolve_owner
from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND
from homing.kube.state.cluster import ClusterState
from homing.kube.watch.frameworkwatch import JobSets, LeaderWorkerSets
from homing.kube.watch.watches import CLUSTER_KINDS, Kind, Watched
from homing_e2e import framework_pods as fp

NS = "team-a"


def watched(handle) -> Watched:
    return Watched(Kind("test", "x.io", "v1", "tests"), handle, on_listed=getattr(handle, "on_listed", None))


def listing(w: Watched, *objs: dict) -> None:
    """One whole listing of these objects, as the re-list hands them over."""
    w.begin(judging=True)
    for o in objs:
        w.listed(o)
    w.end({o["metadata"]["uid"] for o in objs}, now=0.0)


def _lws(name: str, uid: str) -> dict:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": NS, "uid": uid}}


def _jobset(name: str, uid: str, trainjob_uid: str | None = None) -> dict:
    meta: dict = {"name": name, "namespace": NS, "uid": uid}
    if trainjob_uid:
        meta["ownerReferences"] = [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name,
                                    "uid": trainjob_uid, "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta}


def test_lws_cache_is_live_after_its_first_listing_and_forgets_what_a_relist_lacks():
    cluster = ClusterState(Settings())
    fw = cluster.workloads.frameworks
    watch = watched(LeaderWorkerSets(fw))
    worker = fp.lws_worker(NS, "vllm", 0, 1, "sts-uid")
    assert resolve_owner(worker, cluster.workloads).kind == "StatefulSet"  # no watch yet: controller as is
    listing(watch, _lws("vllm", "lws-uid"))
    assert LWS_KIND in fw.live
    owner = resolve_owner(worker, cluster.workloads)
    assert (owner.kind, owner.uid, owner.api_version) == ("LeaderWorkerSet", "lws-uid", "leaderworkerset.x-k8s.io/v1")
    listing(watch)  # deleted while the watch was away
    assert resolve_owner(worker, cluster.workloads) is None


def test_jobset_watch_lifts_to_the_trainjob_and_an_empty_listing_is_live_too():
    cluster = ClusterState(Settings())
    fw = cluster.workloads.frameworks
    watch = watched(JobSets(fw))
    listing(watch)
    assert JOBSET_KIND in fw.live
    pod = fp.trainjob_pod(NS, "llama", "js-uid", 0, 0, "job-uid")
    assert resolve_owner(pod, cluster.workloads) is None  # not seen yet: untracked, not keyed by the Job
    watch.event("ADDED", _jobset("llama", "js-uid", trainjob_uid="tj-uid"))
    owner = resolve_owner(pod, cluster.workloads)
    assert (owner.kind, owner.name, owner.uid) == ("TrainJob", "llama", "tj-uid")
    watch.event("DELETED", _jobset("llama", "js-uid"))
    assert resolve_owner(pod, cluster.workloads) is None


def test_malformed_objects_are_ignored():
    cluster = ClusterState(Settings())
    fw = cluster.workloads.frameworks
    for handler in (LeaderWorkerSets(fw), JobSets(fw)):
        handler(None, {"metadata": {"name": "no-uid"}})
        handler(None, {"metadata": None})
        handler("DELETED", {})
    assert not fw.leaderworkersets and not fw.jobsets


def test_both_watches_are_optional():
    optional = {k.name: k.optional for k in CLUSTER_KINDS}
    assert optional["leaderworkersets"] is True and optional["jobsets"] is True
    assert optional["nodes"] is False
