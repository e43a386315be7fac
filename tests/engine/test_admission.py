"""behaviour.md "Admission": decide() end to end on pod dicts: scope, identity, strategy, decision annotations."""
from __future__ import annotations

import copy
import json

import jsonpatch
import pytest

from homing.config import Bounds, Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory import LivePod, MemoryIndex
from homing.engine.model import Health
from homing.engine.placement.decide import decide

from .helpers import NOW, PREFERRED, owner, pod, snapshot

SETTINGS = Settings()
NODES = [f"n{i}" for i in range(6)]


def _setup(ranks=None, pool=None):
    """An index with one StatefulSet owner (ranks) and one Deployment owner (pool)."""
    index, workloads = MemoryIndex(), WorkloadIndex()
    sts = owner(kind="StatefulSet", name="web")
    deploy = owner(kind="Deployment", name="infer")
    rs = owner(kind="ReplicaSet", name="infer-6b7c8d")
    workloads.learn_replicaset(rs.namespace, rs.uid, deploy)
    for r, node in (ranks or {}).items():
        index.record_bind(sts, r, node, (), NOW - 100)
    for node in pool or ():
        index.record_bind(deploy, None, node, (), NOW - 100)
    return index, workloads, sts, deploy, rs


def _decision_record(decision) -> dict:
    return json.loads(decision.annotations()["homing.io/decision"])


def test_no_memory_outcome_none_with_decision_annotation():
    index, workloads, sts, *_ = _setup()
    p = pod(name="web-3", controller=sts)
    d = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert (d.outcome, d.reason, d.rank, d.home, d.terms) == ("none", "no-memory", "3", None, [])
    patched = jsonpatch.apply_patch(p, d.patch(p))
    assert "homing.io/home" not in patched["metadata"]["annotations"]
    record = json.loads(patched["metadata"]["annotations"]["homing.io/decision"])
    assert record == {"owner": "StatefulSet/ns/web", "rank": "3", "home": None, "reason": "no-memory"}
    assert patched["spec"] == p["spec"]


def test_home_outcome():
    index, workloads, sts, *_ = _setup(ranks={"0": "n0", "1": "n1", "2": "n2"})
    p = pod(name="web-1", controller=sts)
    d = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert (d.outcome, d.reason, d.home, d.rank, d.owner_uid) == ("home", "home", "n1", "1", sts.uid)
    patched = jsonpatch.apply_patch(p, d.patch(p))
    assert patched["metadata"]["annotations"]["homing.io/home"] == "n1"
    assert _decision_record(d)["home"] == "n1"
    preferred = patched["spec"]["affinity"]["nodeAffinity"][PREFERRED]
    assert preferred[0] == {
        "weight": 100,
        "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]},
    }
    keep = preferred[1]["preference"]["matchExpressions"][0]
    assert (keep["operator"], keep["values"]) == ("NotIn", ["n0", "n2"])


def test_unhealthy_home_is_avoided_and_recorded():
    index, workloads, sts, *_ = _setup(ranks={"0": "n0"})
    snap = snapshot({**{n: Health.HEALTHY for n in NODES}, "n0": Health.UNHEALTHY})
    d = decide(pod(name="web-0", controller=sts), index, workloads, snap, SETTINGS, NOW)
    assert (d.outcome, d.reason, d.home, d.avoided) == ("none", "home-unhealthy", None, ["n0"])
    assert _decision_record(d)["avoid"] == ["n0"]
    assert "homing.io/home" not in d.annotations()


def test_truncation_recorded_in_annotation():
    index, workloads, sts, *_ = _setup(ranks={str(i): f"n{i}" for i in range(6)})
    settings = Settings(bounds=Bounds(max_term_values=2))
    d = decide(pod(name="web-0", controller=sts), index, workloads, snapshot(NODES), settings, NOW)
    assert d.truncated and _decision_record(d)["truncated"] is True
    assert all(len(t.values) <= 2 for t in d.terms)


@pytest.mark.parametrize("bad", ["-1", "abc", "1e3", "\u0663", "99999999"])
def test_invalid_rank_warns_and_is_handled_rankless(bad):
    index, workloads, sts, *_ = _setup(ranks={"0": "n0"})
    index.record_bind(sts, None, "n4", (), NOW - 50)  # the owner has a pool too
    p = pod(name="web-0", controller=sts, annotations={"hccl/rankIndex": bad})
    d = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert d.rank is None
    assert len(d.warnings) == 1 and "hccl/rankIndex" in d.warnings[0]
    assert (d.outcome, d.promise) == ("pool", "n4"), "rankless handling: the pool, not rank 0's home"


def test_invalid_rank_without_pool_is_none():
    index, workloads, sts, *_ = _setup(ranks={"0": "n0"})
    p = pod(name="web-0", controller=sts, annotations={"hccl/rankIndex": "-3"})
    d = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert (d.outcome, d.reason, d.rank, d.terms) == ("none", "no-memory", None, [])
    assert d.warnings


def test_rankless_replicas_get_different_promises():
    """Scale 0 -> 3: each admitted pod is promised a different home (the adapter records
    the promise in the index); an occupied home is never promised."""
    index, workloads, _, deploy, rs = _setup(pool=["n1", "n2", "n3", "n4"])
    index.pod_seen("live", LivePod(deploy.key, None, "n4"))
    snap = snapshot(NODES)
    promised = []
    for i in range(4):
        p = pod(name=f"infer-6b7c8d-{i}", controller=rs, labels={"pod-template-hash": "6b7c8d"})
        d = decide(p, index, workloads, snap, SETTINGS, NOW)
        assert d.owner_uid == deploy.uid
        if d.promise:
            index.promised.make(deploy.key, d.promise, NOW, SETTINGS.lifetimes.promise_seconds)
        promised.append((d.outcome, d.promise))
    assert sorted(p for _, p in promised[:3]) == ["n1", "n2", "n3"]
    assert promised[3] == ("none", None)
    later = decide(pod(name="infer-x", controller=rs), index, workloads, snap, SETTINGS,
                   NOW + SETTINGS.lifetimes.promise_seconds)
    assert later.outcome == "pool" and later.promise in {"n1", "n2", "n3"}, "promises time out"


@pytest.mark.parametrize(
    "make, reason",
    [
        pytest.param(lambda sts: pod(name="web-0", controller=sts, node_name="n0"), "already-bound", id="bound"),
        pytest.param(lambda sts: pod(name="web-0", controller=sts, resources={"cpu": "1"}), "no-accelerator",
                     id="no-accelerator"),
        pytest.param(lambda sts: pod(name="web-0", controller=sts, annotations={"homing.io/decision": "{}"}),
                     "already-decided", id="decided"),
        pytest.param(lambda sts: pod(name="web-0"), "no-controller", id="no-controller"),
    ],
)
def test_skipped(make, reason):
    index, workloads, sts, *_ = _setup(ranks={"0": "n0"})
    p = make(sts)
    d = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert (d.outcome, d.reason) == ("skipped", reason)
    assert d.patch(p) == []


def _garbage(meta_update=None, spec=None):
    def make(sts):
        p = pod(name="web-0", controller=sts)
        if meta_update is not None:
            p["metadata"].update(meta_update)
        if spec is not None:
            p["spec"] = spec
        return p
    return make


GARBAGE = [
    pytest.param(_garbage({"annotations": None, "labels": None}), id="annotations-and-labels-none"),
    pytest.param(_garbage({"ownerReferences": ["x", None, 3, []]}), id="ownerrefs-not-dicts"),
    pytest.param(_garbage({"ownerReferences": "garbage"}), id="ownerrefs-a-string"),
    pytest.param(_garbage({"ownerReferences": {"controller": True, "kind": "Job"}}), id="ownerrefs-a-dict"),
    pytest.param(_garbage({"ownerReferences": None}), id="ownerrefs-none"),
    pytest.param(_garbage({"ownerReferences": [{"controller": True}]}), id="ownerref-empty-controller"),
    pytest.param(_garbage({"namespace": None, "name": None}), id="no-name-no-namespace"),
    pytest.param(_garbage({"labels": {"apps.kubernetes.io/pod-index": ["3"]}}), id="rank-label-a-list"),
    pytest.param(_garbage({"labels": {"apps.kubernetes.io/pod-index": None}}), id="rank-label-none"),
    pytest.param(_garbage({"annotations": {"hccl/rankIndex": {"x": 1}}}), id="rank-annotation-a-dict"),
    pytest.param(_garbage(spec={"containers": None}), id="containers-none"),
    pytest.param(_garbage(spec={"containers": [None, {"resources": None}, {"resources": {"limits": None}}]}),
                 id="container-garbage"),
    pytest.param(lambda sts: {"metadata": None, "spec": None}, id="metadata-none"),
    pytest.param(lambda sts: {}, id="empty-dict"),
]


@pytest.mark.parametrize("make", GARBAGE)
def test_garbage_metadata_does_not_raise(make):
    index, workloads, sts, *_ = _setup(ranks={"0": "n0"})
    p = make(sts)
    d = decide(copy.deepcopy(p), index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert d.outcome in {"skipped", "none", "home", "pool"}
    d.annotations()  # serialisable


def test_decide_is_deterministic():
    index, workloads, sts, *_ = _setup(ranks={str(i): f"n{i}" for i in range(5)})
    p = pod(name="web-2", controller=sts)
    first = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    second = decide(p, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert first == second
    assert first.patch(p) == second.patch(p)


def test_replicaset_pod_keys_on_deployment():
    index, workloads, _, deploy, rs = _setup(pool=["n2"])
    d = decide(pod(name="infer-abc", controller=rs), index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert d.owner == "Deployment/ns/infer" and d.owner_uid == deploy.uid
    assert (d.outcome, d.home, d.promise) == ("pool", "n2", "n2")
    assert json.loads(d.annotations()["homing.io/decision"])["home"] == "n2"


def test_a_forged_owner_reference_from_another_namespace_reads_nothing():
    """Memory is keyed by (namespace, UID); a pod naming another
    namespace's owner in its ownerReferences gets no home and no sibling names."""
    index, workloads, sts, *_ = _setup(ranks={"0": "n0", "1": "n1"})
    forged = pod(name="web-1", namespace="attacker", controller=sts)
    d = decide(forged, index, workloads, snapshot(NODES), SETTINGS, NOW)
    assert (d.outcome, d.reason, d.home, d.terms) == ("none", "no-memory", None, [])
    assert d.owner_key == f"attacker/{sts.uid}"
