"""behaviour.md "Memory" lifecycle as a pure step (engine/memory/lifecycle.py): binds, warm nodes, faults
judged when a pod ends, promises, outcomes, durable lastSeen, re-lists. No cluster."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.engine.identity import WorkloadIndex
from homing.engine.identity.podview import pod_view
from homing.engine.memory import forgetting, lifecycle
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.lifecycle import DELETED, LISTED, Faulted, Placed, Policy, Remembered, Warmed
from homing.engine.model import Health

from .helpers import NOW, bind, memory, owner, pod, snapshot

H, U, M = Health.HEALTHY, Health.UNHEALTHY, Health.UNAVAILABLE
HOUR, DAY = 3600.0, 86400.0
POLICY = Policy(fault_memory=HOUR, durable_seen_every=HOUR)
JOB = owner(kind="Job", name="train", uid="job-uid")
DEPLOY = owner(kind="Deployment", name="infer", uid="deploy-uid")


def state(uid="p0", rank="0", node=None, phase="Pending", deleting=False, home=None, reason=None, ref=JOB) -> dict:
    """A pod as a watch event carries it; with a node, as a scheduler bound it there."""
    annotations = {"volcano.sh/task-index": rank} if rank is not None else {}
    if home:
        annotations["homing.io/home"] = home
    p = pod(name=f"w-{uid}", controller=ref, annotations=annotations, uid=uid)
    p["status"] = {"phase": phase}
    if node:
        bind(p, node)
    if reason:
        p["status"]["reason"] = reason
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    return p


def step(index, event, p, nodes=("n1", "n2", "n3"), health=None, now=NOW):
    snap = snapshot({n: (health or {}).get(n, H) for n in nodes})
    view = pod_view(p, WorkloadIndex(), 1_000_000)
    return lifecycle.observe(index, event, view, snap, now, POLICY)


# -- binds, warm, faults judged when the pod ends -------------------------------------------------

@dataclass
class Case:
    events: list  # (event, pod state kwargs, node health at that moment)
    home: str | None  # rank 0's remembered node afterwards
    faults: list  # fault nodes recorded on rank 0
    effects: list  # effect types of the last event


CASES = {
    "bind-remembers": Case([("ADDED", dict(node="n1"), {})], "n1", [], [Remembered]),
    "running-is-warm": Case([("ADDED", dict(node="n1"), {}), ("MODIFIED", dict(node="n1", phase="Running"), {})],
                            "n1", [], [Warmed]),
    "deleted-on-healthy-node-kept-no-fault": Case(
        [("ADDED", dict(node="n1", phase="Running"), {}), (DELETED, dict(node="n1", phase="Running"), {})],
        "n1", [], []),
    "deleted-on-unhealthy-node-is-a-fault": Case(
        [("ADDED", dict(node="n1", phase="Running"), {}), (DELETED, dict(node="n1", phase="Running"), {"n1": U})],
        "n1", ["n1"], [Faulted]),
    "fault-reason-on-healthy-node": Case(
        [("ADDED", dict(node="n1"), {}), ("MODIFIED", dict(node="n1", phase="Failed", reason="NodeLost"), {})],
        "n1", ["n1"], [Faulted]),
    # defect 5: a Job pod that succeeded on a healthy node is not a fault when the node later fails
    "succeeded-then-node-failed-then-deleted": Case(
        [("ADDED", dict(node="n1", phase="Running"), {}), ("MODIFIED", dict(node="n1", phase="Succeeded"), {}),
         (DELETED, dict(node="n1", phase="Succeeded"), {"n1": U})], "n1", [], []),
    # defect 5: a drain (cordon, then eviction) is maintenance
    "evicted-from-a-cordoned-node": Case(
        [("ADDED", dict(node="n1", phase="Running"), {}),
         ("MODIFIED", dict(node="n1", phase="Running", deleting=True), {"n1": M}),
         (DELETED, dict(node="n1", phase="Running", deleting=True), {"n1": M})], "n1", [], []),
    "terminating-while-unhealthy-judged-then": Case(
        [("ADDED", dict(node="n1", phase="Running"), {}),
         ("MODIFIED", dict(node="n1", phase="Running", deleting=True), {"n1": U}),
         (DELETED, dict(node="n1", phase="Running", deleting=True), {})], "n1", ["n1"], []),
    "listed-already-ended-on-unhealthy-node-unknown-when": Case(
        [(LISTED, dict(node="n1", phase="Failed"), {"n1": U})], None, [], []),
    "listed-ended-with-fault-reason": Case(
        [(LISTED, dict(node="n1", phase="Running"), {}), ("MODIFIED", dict(node="n1", phase="Failed", reason="NodeLost"), {})],
        "n1", ["n1"], [Faulted]),
    "move-remembers-previous": Case(
        [("ADDED", dict(uid="a", node="n1"), {}), (DELETED, dict(uid="a", node="n1"), {}),
         ("ADDED", dict(uid="b", node="n2"), {})], "n2", [], [Remembered]),
    "pending-pod-records-nothing": Case([("ADDED", dict(), {})], None, [], []),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_lifecycle(case: Case):
    index = MemoryIndex()
    effects = []
    for event, kwargs, health in case.events:
        effects = step(index, event, state(**kwargs), health=health)
    mem = index.owner(JOB.key)
    entry = mem.ranks.get("0") if mem else None
    assert (entry.node if entry else None) == case.home
    faults = sorted(m.node for m in entry.faults or ()) if entry else []
    assert faults == case.faults
    assert [type(e) for e in effects] == case.effects


# -- defect 1: the durable lastSeen follows the pods ----------------------------------------------

def test_a_long_running_owner_scaled_to_zero_is_written_when_its_last_pod_goes():
    """Ran 4 days unchanged (last write 4 days ago), then scaled to zero: the last pod's
    deletion marks the owner for writing with lastSeen now, so a restart finds it fresh."""
    index = MemoryIndex()
    index.adopt(memory(JOB, ranks={"0": "n1"}, last_seen=NOW - 4 * DAY, warm=["0"]))
    step(index, LISTED, state(node="n1", phase="Running"), now=NOW - 10)
    index.dirty.clear()  # the flush after start-up
    step(index, DELETED, state(node="n1", phase="Running"), now=NOW)
    assert JOB.key in index.dirty
    assert index.owner(JOB.key).last_seen == NOW
    assert forgetting.expired(index, NOW + 300, 72 * HOUR) == []


def test_live_pods_keep_the_stored_last_seen_within_the_interval():
    index = MemoryIndex()
    step(index, "ADDED", state(node="n1", phase="Running"), now=NOW)
    index.dirty.clear()
    step(index, "MODIFIED", state(node="n1", phase="Running"), now=NOW + HOUR / 2)
    assert index.dirty == set(), "not every event writes"
    step(index, "MODIFIED", state(node="n1", phase="Running"), now=NOW + HOUR)
    assert index.dirty == {JOB.key}, "at least hourly while pods live"


# -- defect 3: phantoms ---------------------------------------------------------------------------

def test_a_pod_orphaned_or_opted_out_stops_being_live():
    index = MemoryIndex()
    step(index, "ADDED", state(node="n1"))
    assert index.occupied_nodes(JOB.key) == {"n1"}
    lifecycle.untracked(index, "p0", NOW + 1)
    assert index.occupied_nodes(JOB.key) == set() and not index.has_live_pods(JOB.key)
    assert index.owner(JOB.key).ranks["0"].node == "n1", "memory kept"


def test_pods_missing_from_a_relist_are_gone():
    index = MemoryIndex()
    step(index, "ADDED", state(uid="a", node="n1"))
    step(index, "ADDED", state(uid="b", rank="1", node="n2"))
    index.occupy("a", "n1")
    index.occupy("b", "n2")
    assert lifecycle.relisted(index, {"b"}, NOW + 1) == ["a"]
    assert index.occupied_nodes(JOB.key) == {"n2"}
    assert index.pod_node == {"b": "n2"}


# -- defect 4: rankless promises --------------------------------------------------------------------

def test_a_promise_ends_on_the_promised_node_when_the_pod_binds_elsewhere():
    index = MemoryIndex()
    index.promised.make(DEPLOY.key, "n1", NOW, 120)
    step(index, "ADDED", state(rank=None, home="n1", ref=DEPLOY))
    step(index, "MODIFIED", state(rank=None, home="n1", node="n3", ref=DEPLOY), now=NOW + 1)
    assert index.promised.nodes(DEPLOY.key, NOW + 1) == set()


def test_a_pending_pod_keeps_its_promise_past_the_timeout():
    index = MemoryIndex()
    index.promised.make(DEPLOY.key, "n1", NOW, 120)
    step(index, "ADDED", state(rank=None, home="n1", ref=DEPLOY), now=NOW + 1)
    assert index.promised.nodes(DEPLOY.key, NOW + 1000) == {"n1"}
    step(index, DELETED, state(rank=None, home="n1", ref=DEPLOY), now=NOW + 1001)
    assert index.promised.nodes(DEPLOY.key, NOW + 1001) == set()


def test_rankless_resync_does_not_dirty_the_owner():
    index = MemoryIndex()
    step(index, "ADDED", state(rank=None, node="n1", ref=DEPLOY))
    index.dirty.clear()
    step(index, "MODIFIED", state(rank=None, node="n1", ref=DEPLOY), now=NOW + 5)
    assert index.dirty == set()
    assert index.owner(DEPLOY.key).pool["n1"].last_used == NOW


# -- defect 12: home busy with another workload -----------------------------------------------------

@pytest.mark.parametrize(
    "occupant, reason",
    [
        pytest.param("other-workload-pod", "home-busy", id="another-workload-on-home"),
        pytest.param(None, "unknown", id="home-free"),
    ],
)
def test_outcome_says_home_busy_for_any_occupant(occupant, reason):
    index = MemoryIndex()
    if occupant:
        index.occupy(occupant, "n1")
    effects = step(index, "ADDED", state(node="n2", home="n1"))
    placed = [e for e in effects if isinstance(e, Placed)]
    assert [(p.outcome.result, p.outcome.reason) for p in placed] == [("elsewhere", reason)]
    assert index.owner(JOB.key).stats.elsewhere == 1


def test_outcome_counted_once_and_not_for_listed_pods():
    index = MemoryIndex()
    assert not [e for e in step(index, LISTED, state(node="n1", home="n1")) if isinstance(e, Placed)]
    index2 = MemoryIndex()
    first = step(index2, "ADDED", state(node="n1", home="n1"))
    again = step(index2, "MODIFIED", state(node="n1", home="n1", phase="Running"))
    assert [type(e) for e in first if isinstance(e, Placed)] == [Placed]
    assert not [e for e in again if isinstance(e, Placed)]


# -- defect 7: an owner in another namespace is out of reach ----------------------------------------

def test_a_forged_owner_reference_from_another_namespace_changes_nothing():
    index = MemoryIndex()
    step(index, "ADDED", state(node="n1"))
    forged = state(uid="evil", node="n3")
    forged["metadata"]["namespace"] = "attacker"
    step(index, "ADDED", forged)
    assert index.owner(JOB.key).ranks["0"].node == "n1"
    assert index.owner(f"attacker/{JOB.uid}").ranks["0"].node == "n3"


# -- invariants over any sequence of events ---------------------------------------------------------

PODS = ["a", "b", "c"]
NODES = ["n1", "n2", "n3"]
event = st.tuples(
    st.sampled_from(["ADDED", "MODIFIED", DELETED, LISTED, "relist"]),
    st.sampled_from(PODS),
    st.sampled_from([None, *NODES]),
    st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    st.booleans(),  # deleting
    st.sampled_from(NODES),  # the node that is unhealthy at that moment
)


@hsettings(max_examples=300, deadline=None)
@given(events=st.lists(event, max_size=30))
def test_invariants_hold_over_any_event_sequence(events):
    index = MemoryIndex()
    alive: set[str] = set()
    last_bound: dict[str, str] = {}
    could_fault: dict[str, set[str]] = {}  # rank -> nodes that were unhealthy when its pod ended there
    for t, (kind, uid, node, phase, deleting, sick) in enumerate(events):
        now = NOW + t
        if kind == "relist":
            lifecycle.relisted(index, alive, now)
            continue
        rank = str(PODS.index(uid))
        p = state(uid=uid, rank=rank, node=node, phase=phase, deleting=deleting)
        step(index, kind, p, health={sick: U}, now=now)
        ending = kind == DELETED or phase in ("Succeeded", "Failed") or deleting
        if ending and node == sick:
            could_fault.setdefault(rank, set()).add(node)
        if kind == DELETED:
            alive.discard(uid)
        else:
            alive.add(uid)
            if node and not ending:
                last_bound[rank] = node
        assert set(index.live) == alive, "live pods are exactly those seen and not deleted: no phantom"
        mem = index.owner(JOB.key)
        for r, bound_node in last_bound.items():
            assert mem.ranks[r].node == bound_node, "a rank's home is where it last bound"
        for r, entry in (mem.ranks.items() if mem else ()):
            faults = {m.node for m in entry.faults or ()}
            assert faults <= could_fault.get(r, set()), "a fault only where the node was unhealthy as the pod ended"
        assert index.has_live_pods(JOB.key) == bool(index.live)
