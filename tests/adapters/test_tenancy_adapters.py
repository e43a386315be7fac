"""Tenancy through the adapters (docs/behaviour.md "Identity", "Tenants"), from raw watch
objects as the API server sends them: a pod naming another namespace's ReplicaSet gets none
of that workload's homes and changes none of its memory; a pod that only names a node holds
nothing there; another namespace's claims neither steer a pod nor mark a replica for
deletion unless tenants share nodes."""
from __future__ import annotations

from tests.engine.helpers import NOW

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import Health, NodeState
from homing.kube.admission.admitter import Admitter
from homing.kube.leader.deletion_marks import DeletionMarks
from homing.kube.state.cluster import ClusterState
from homing.kube.state.pods import PodObserver

A, B = "team-a", "team-b"
NPU = "huawei.com/Ascend910"
SCHEDULED = {"type": "PodScheduled", "status": "True"}


class World:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self.index = MemoryIndex()
        self.cluster = ClusterState(self.settings)
        self.pods = PodObserver(self.settings, self.index, self.cluster)
        self.admitter = Admitter(self.settings, self.index, self.cluster)
        for ns in (A, B):
            self.cluster.observe_namespace("ADDED", {"metadata": {"name": ns, "labels": {"homing.io/enabled": "true"}}})
        for n in ("a1", "a2", "b1", "b2"):
            self.cluster.snapshot.put(NodeState(n, Health.HEALTHY, npus=8))


def replicaset(ns: str, name: str, uid: str, deployment: str, deployment_uid: str) -> dict:
    return {"metadata": {"namespace": ns, "name": name, "uid": uid, "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "uid": deployment_uid, "controller": True}]}}


def a_pod(ns: str, name: str, owner: dict | None, node: str | None = None, status: dict | None = None,
          annotations: dict | None = None, labels: dict | None = None) -> dict:
    meta = {"namespace": ns, "name": name, "uid": f"uid-{ns}-{name}", "annotations": annotations or {},
            "labels": labels or {}, "creationTimestamp": "2026-12-01T06:00:00Z"}
    if owner is not None:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    spec: dict = {"containers": [{"name": "main", "image": "infer:1", "resources": {"limits": {NPU: "8"}, "requests": {NPU: "8"}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": status if status is not None else {"phase": "Pending"}}


def bound(p: dict, node: str) -> dict:
    """What a scheduler's binding leaves: spec.nodeName and PodScheduled True."""
    return {**p, "spec": {**p["spec"], "nodeName": node}, "status": {"phase": "Pending", "conditions": [SCHEDULED]}}


def names_in_terms(patch: list[dict]) -> set[str]:
    names: set[str] = set()
    for op in patch:
        for term in (((op.get("value") or {}) if isinstance(op.get("value"), dict) else {}).get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution") or ():
            for expr in term["preference"].get("matchExpressions") or ():
                names.update(expr.get("values") or ())
    return names


def test_a_pod_naming_another_namespaces_replicaset_gets_none_of_its_homes_and_changes_none_of_its_memory():
    w = World()
    rs = replicaset(A, "web-7c9d4f", "rs-a", "web", "deploy-a")
    w.cluster.observe_replicaset("ADDED", rs)
    rs_ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7c9d4f", "uid": "rs-a"}
    own = a_pod(A, "web-7c9d4f-aaaaa", rs_ref, labels={"pod-template-hash": "7c9d4f"})
    w.pods.observe("ADDED", own, now=NOW)
    w.pods.observe("MODIFIED", bound(own, "a1"), now=NOW + 1)
    assert set(w.index.owner(f"{A}/deploy-a").pool) == {"a1"}
    a_memory_before = dict(w.index.owner(f"{A}/deploy-a").pool)

    intruder = a_pod(B, "web-7c9d4f-bbbbb", rs_ref, labels={"pod-template-hash": "7c9d4f"})
    decision, patch = w.admitter.admit(intruder, dryrun=False, now=NOW + 2)
    assert decision.owner_key == f"{B}/rs-a" and decision.owner == f"ReplicaSet/{B}/web-7c9d4f"
    assert "a1" not in names_in_terms(patch) and decision.promise is None
    w.pods.observe("ADDED", intruder, now=NOW + 3)
    w.pods.observe("MODIFIED", bound(intruder, "b1"), now=NOW + 4)
    assert dict(w.index.owner(f"{A}/deploy-a").pool) == a_memory_before
    assert set(w.index.owner(f"{B}/rs-a").pool) == {"b1"}


def test_a_pod_that_only_names_a_node_holds_nothing_there_and_waits_for_no_scheduler():
    w = World()
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "squat", "uid": "squat"}
    ghost = a_pod(A, "squat-0", job, node="ghost", annotations={"volcano.sh/task-index": "0"})
    w.pods.observe("ADDED", ghost, now=NOW)
    assert "uid-team-a-squat-0" not in w.index.pod_node and "ghost" not in w.index.node_used
    assert "uid-team-a-squat-0" not in w.index.waiting.pending and "uid-team-a-squat-0" not in w.pods.queued
    assert w.index.owner(f"{A}/squat") is None
    idle = a_pod(A, "squat-1", job, node="a2", annotations={"volcano.sh/task-index": "1"})
    w.pods.observe("ADDED", idle, now=NOW)
    assert "a2" not in w.index.node_used, "a real node its kubelet never took the pod on"
    w.pods.observe("MODIFIED", {**idle, "status": {"phase": "Running"}}, now=NOW + 1)
    assert w.index.node_used == {"a2": 8} and w.index.owner(f"{A}/squat").ranks["1"].node == "a2"


def claimed_in_a(w: World) -> None:
    """A's training ran rank 0 on a1 and was evicted; rank 1 waits: a1 is A's claimed home."""
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "train-a"}
    r0 = a_pod(A, "train-0", job, annotations={"volcano.sh/task-index": "0"})
    w.pods.observe("ADDED", bound(r0, "a1"), now=NOW)
    w.pods.observe("DELETED", bound(r0, "a1"), now=NOW + 1)
    w.pods.observe("ADDED", a_pod(A, "train-1", job, annotations={"volcano.sh/task-index": "1"}), now=NOW + 2)


def b_replica(w: World, node: str) -> dict:
    rs = replicaset(B, "infer-5b8e2a", "rs-b", "infer", "deploy-b")
    w.cluster.observe_replicaset("ADDED", rs)
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-5b8e2a", "uid": "rs-b"}
    return a_pod(B, "infer-5b8e2a-x", ref, labels={"pod-template-hash": "5b8e2a"})


def test_another_namespaces_claimed_home_steers_a_pod_only_on_shared_nodes():
    for shared, steered in ((False, False), (True, True)):
        w = World(Settings(tenancy={"shared_nodes": shared}))
        claimed_in_a(w)
        job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "eval", "uid": "eval-b"}
        _, patch = w.admitter.admit(a_pod(B, "eval-0", job, annotations={"volcano.sh/task-index": "0"}), False, NOW + 3)
        assert ("a1" in names_in_terms(patch)) == steered, f"shared_nodes={shared}"


def test_a_replica_on_another_namespaces_claimed_home_is_marked_only_on_shared_nodes():
    for shared, marked in ((False, False), (True, True)):
        w = World(Settings(tenancy={"shared_nodes": shared}))
        claimed_in_a(w)
        w.pods.observe("ADDED", bound(b_replica(w, "a1"), "a1"), now=NOW + 3)
        w.pods.observe("ADDED", bound(a_pod(A, "infer-own", {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                              "name": "x-1", "uid": "rs-a-x"}), "a1"), now=NOW + 3)
        runtime = type("Runtime", (), {"pods": w.pods, "index": w.index})()
        due = DeletionMarks(None, runtime, w.settings, lambda: True).due(NOW + 4)  # type: ignore[arg-type]
        assert sorted(m.namespace for m in due) == ([A, B] if marked else [A]), f"shared_nodes={shared}"
