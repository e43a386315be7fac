"""The LeaderWorkerSet and JobSet watches feed the identity caches (behaviour.md "Identity"): a listing
makes a cache live, a re-list that lacks an object forgets it, and a JobSet's TrainJob
controller is what its pods are lifted to."""
from __future__ import annotations

from homing.config import Settings
from homing.engine.identity import resolve_owner
from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND
from homing.operator.cluster import ClusterState
from homing.operator.frameworkwatch import JobSets, LeaderWorkerSets
from homing.operator.startup import Relisted, cluster_watches
from homing_e2e import framework_pods as fp

NS = "team-a"


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
    watch = Relisted(LeaderWorkerSets(fw))
    worker = fp.lws_worker(NS, "vllm", 0, 1, "sts-uid")
    assert resolve_owner(worker, cluster.workloads).kind == "StatefulSet"  # no watch yet: controller as is
    watch(None, _lws("vllm", "lws-uid"))
    watch.listed({"lws-uid"})
    assert LWS_KIND in fw.live
    owner = resolve_owner(worker, cluster.workloads)
    assert (owner.kind, owner.uid, owner.api_version) == ("LeaderWorkerSet", "lws-uid", "leaderworkerset.x-k8s.io/v1")
    watch.listed(set())  # deleted while the watch was away
    assert resolve_owner(worker, cluster.workloads) is None


def test_jobset_watch_lifts_to_the_trainjob_and_an_empty_listing_is_live_too():
    cluster = ClusterState(Settings())
    fw = cluster.workloads.frameworks
    watch = Relisted(JobSets(fw))
    watch.listed(set())
    assert JOBSET_KIND in fw.live
    pod = fp.trainjob_pod(NS, "llama", "js-uid", 0, 0, "job-uid")
    assert resolve_owner(pod, cluster.workloads) is None  # not seen yet: untracked, not keyed by the Job
    watch("ADDED", _jobset("llama", "js-uid", trainjob_uid="tj-uid"))
    owner = resolve_owner(pod, cluster.workloads)
    assert (owner.kind, owner.name, owner.uid) == ("TrainJob", "llama", "tj-uid")
    watch("DELETED", _jobset("llama", "js-uid"))
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
    cluster = ClusterState(Settings())

    class Rt:
        pass

    rt = Rt()
    rt.cluster = cluster
    watches = {resource: optional for resource, _, _, optional in cluster_watches(rt)}
    assert watches["leaderworkersets"] is True and watches["jobsets"] is True
