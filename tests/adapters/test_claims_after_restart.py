"""A restarted or newly elected leader keeps the scale-in marks that were correct before it
(issue 41, behaviour.md "Claimed homes" and "Deletion cost"). The start-up here is the
operator's own (kube/watch/startup.py: every kind listed, the PlacementMemory loaded, the pods
listed) against an in-process stand-in for the API server that holds what the old leader
left: its PlacementMemory, the pods, and the mark it wrote on the replica on a claimed home."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.replicas.deletion_cost import ANNOTATION, is_mark
from homing.kube.client import KubeError
from homing.kube.health import gcpause
from homing.kube.leader.deletion_marks import DeletionMarks
from homing.kube.runtime import Runtime
from homing.kube.state.cluster import ClusterState
from homing.kube.state.pods import PodObserver
from homing.kube.store.store import Store
from homing.kube.watch import startup, watches

from .test_store_writes import COLLECTION, FakeKube

NOW = 1_800_000_000.0
NS = "ai"
NPU = "huawei.com/Ascend910"
JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "train-uid"}
RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-5b8e2a", "uid": "rs-uid"}


def namespace() -> dict[str, Any]:
    return {"metadata": {"name": NS, "uid": "ns-uid", "resourceVersion": "1", "labels": {"homing.io/enabled": "true"}}}


def replicaset() -> dict[str, Any]:
    return {"metadata": {"namespace": NS, "name": RS["name"], "uid": RS["uid"], "resourceVersion": "2", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "infer", "uid": "deploy-uid", "controller": True}]}}


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"node-{name}", "resourceVersion": "3", "labels": {}}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {NPU: "8"}}}


def a_pod(name: str, owner: dict[str, Any], node_name: str | None = None, rank: str | None = None,
          version: int = 10) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": NS, "name": name, "uid": f"uid-{name}", "resourceVersion": str(version),
                            "creationTimestamp": "2027-01-15T06:00:00Z", "ownerReferences": [{**owner, "controller": True}],
                            "annotations": {"volcano.sh/task-index": rank} if rank is not None else {}}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "train:1",
                                            "resources": {"limits": {NPU: "8"}, "requests": {NPU: "8"}}}]}
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return {"metadata": meta, "spec": spec, "status": status}


class Api(FakeKube):
    """The stand-in: FakeKube keeps the PlacementMemory objects; the other kinds are listed
    from `kinds` (path -> objects); the optional CRDs are not installed."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: dict[str, list[dict[str, Any]]] = {}

    async def request(self, method: str, path: str, body: Any = None, query: Any = None,
                      content_type: str = "application/json", timeout: float = 30,
                      accept: str = "application/json") -> dict[str, Any]:
        if path.startswith("/apis/homing.io/") and (path == COLLECTION or "/namespaces/" in path):
            return await super().request(method, path, body, query, content_type, timeout)
        self.calls.append((method, path))
        if method == "GET" and path in self.kinds:
            return {"items": copy.deepcopy(self.kinds[path]), "metadata": {"resourceVersion": "100"}}
        if method == "GET" and path.startswith("/apis/"):
            raise KubeError(404, "the server could not find the requested resource")
        raise AssertionError(f"unexpected request {method} {path}")


class OldLeader:
    """The leader before the restart: it watched rank 0 of the training job run on `a` and
    go (evicted), rank 1 wait, and the Deployment's replicas bind to `a` and `b`."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.index = MemoryIndex()
        self.cluster = ClusterState(self.settings)
        self.pods = PodObserver(self.settings, self.index, self.cluster)
        self.cluster.observe_namespace(None, namespace())
        self.cluster.observe_replicaset(None, replicaset())
        self.pods.claims_known = True  # it watched everything happen
        rank0 = a_pod("train-0", JOB, "a", rank="0")
        self.pods.observe("ADDED", rank0, now=NOW)
        self.pods.observe("DELETED", rank0, now=NOW + 10)
        self.waiting = a_pod("train-1", JOB, rank="1")
        self.pods.observe("ADDED", self.waiting, now=NOW + 11)
        self.on_a, self.on_b = a_pod("infer-5b8e2a-a", RS, "a"), a_pod("infer-5b8e2a-b", RS, "b")
        for p in (self.on_a, self.on_b):
            self.pods.observe("ADDED", p, now=NOW + 12)


def left_behind(old: OldLeader) -> Api:
    """What the API server holds once the old leader has marked the replica on `a` (its
    claimed home) and gone: the pods, the mark, and (after `written`) its memory."""
    (mark,) = DeletionMarks(None, old, old.settings, lambda: True).due(NOW + 13)  # type: ignore[arg-type]
    assert mark.name == old.on_a["metadata"]["name"] and is_mark(mark.value)
    marked = copy.deepcopy(old.on_a)
    marked["metadata"]["annotations"][ANNOTATION] = mark.value
    marked["metadata"]["resourceVersion"] = "11"
    api = Api()
    api.kinds = {
        "/api/v1/namespaces": [namespace()],
        "/apis/apps/v1/replicasets": [replicaset()],
        "/api/v1/nodes": [node("a"), node("b")],
        "/api/v1/pods": [old.waiting, marked, old.on_b],  # rank 0 is gone
    }
    return api


async def written(api: Api, old: OldLeader) -> None:
    await Store(api).flush(old.index)
    assert api.stored(NS), "the old leader wrote its memory"


async def started(api: Api, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A new process's start-up against the API server as it is."""
    monkeypatch.setattr(gcpause, "settle", lambda: None)  # no gc.freeze in the test process
    rt = Runtime(Settings(), store=Store(api))
    await startup.load(rt, watches.for_runtime(rt, api))  # type: ignore[arg-type]
    return rt


def pod_patches(api: Api) -> list[tuple[str, str]]:
    return [c for c in api.calls if c[0] == "PATCH" and "/pods/" in c[1]]


async def test_the_new_leader_keeps_the_mark_on_the_replica_that_holds_a_claimed_home(monkeypatch):
    old = OldLeader()
    api = left_behind(old)
    await written(api, old)
    rt = await started(api, monkeypatch)
    marks = DeletionMarks(api, rt, rt.settings, lambda: True)  # type: ignore[arg-type]
    assert marks.due(NOW + 20) == [], "every mark the old leader wrote is still correct"
    assert await marks.once(NOW + 20) == 0
    assert pod_patches(api) == [], "no pod was patched"


async def test_a_home_vacated_while_no_process_watched_is_claimed_by_the_new_leader(monkeypatch):
    """Rank 1 ran on `b`, where the other replica sits, and the old leader wrote that down;
    its pod went while no process watched and rank 2 waits. The new leader marks the replica
    on `b`, as a leader that saw the pod go would have, and keeps the mark on `a`."""
    old = OldLeader()
    api = left_behind(old)
    rank1 = copy.deepcopy(old.waiting)
    rank1["spec"]["nodeName"] = "b"
    rank1["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    old.pods.observe("MODIFIED", rank1, now=NOW + 14)
    await written(api, old)
    again = a_pod("train-2", JOB, rank="2")
    api.kinds["/api/v1/pods"] = [p for p in api.kinds["/api/v1/pods"] if p["metadata"]["name"] != "train-1"] + [again]
    rt = await started(api, monkeypatch)
    (mark,) = DeletionMarks(api, rt, rt.settings, lambda: True).due(NOW + 20)  # type: ignore[arg-type]
    assert mark.name == old.on_b["metadata"]["name"] and is_mark(mark.value)


async def test_no_mark_is_written_before_start_up_has_rebuilt_the_claims(monkeypatch):
    """A leader whose pods are listed but whose claims are not rebuilt yet writes nothing:
    judged against no claims, the correct mark would be removed."""
    old = OldLeader()
    api = left_behind(old)
    await written(api, old)
    rt = await started(api, monkeypatch)
    rt.pods.claims_known = False
    rt.index.vacancies = type(rt.index.vacancies)()  # as before the rebuild: no vacant homes
    assert await DeletionMarks(api, rt, rt.settings, lambda: True).once(NOW + 20) == 0  # type: ignore[arg-type]
    assert pod_patches(api) == []
