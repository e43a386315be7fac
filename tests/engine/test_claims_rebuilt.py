"""Claims survive a restart (issue 41, behaviour.md "Claimed homes" and "Deletion cost"):
the vacant homes a new process rebuilds from the PlacementMemory it loads and its first
whole LIST of pods (engine/memory/lifecycle.py `rebuild_vacancies`) are the ones a
process that watched every event had, and so are the claims and the owners each claimed
home waits for (what the scale-in marks follow). Before, a restarted leader had no vacant
homes, no claims, and removed every deletion-cost mark."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings as hsettings, strategies as st, target

from homing.engine.identity import WorkloadIndex
from homing.engine.identity.podview import pod_view
from homing.engine.memory import lifecycle
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.lifecycle import DELETED, LISTED, Policy
from homing.engine.memory.vacancies import Vacancies
from homing.engine.placement.claimed import claimants_by_node, claims, pool_claims
from homing.placementmemory import STATUS_BUDGET, encode, merge, read_object, resource_body, shard_name, snapshot as durable

from .helpers import NOW, bind, owner, pod, snapshot

POLICY = Policy(fault_memory=3600.0, durable_seen_every=3600.0)
NODES = tuple(f"n{i}" for i in range(6))
SNAP = snapshot(NODES)
VOLCANO = "batch.volcano.sh/v1alpha1"
JOB = owner(kind="Job", name="train", api_version=VOLCANO, uid="rebuilt-job")
OTHER = owner(kind="Job", name="eval", api_version=VOLCANO, uid="rebuilt-other")
ELSEWHERE = owner(kind="Job", name="train", namespace="team-b", api_version=VOLCANO, uid="rebuilt-b")
POOL = owner(kind="Deployment", name="infer", uid="rebuilt-pool")
OWNERS = (JOB, OTHER, ELSEWHERE, POOL)
RANKED = {JOB.key, OTHER.key, ELSEWHERE.key}


@dataclass
class Cluster:
    """The pods as the API server holds them: uid -> pod object."""

    pods: dict[str, dict] = field(default_factory=dict)
    made: int = 0

    def create(self, ref, rank: str | None, named: str | None = None) -> tuple[str, dict]:
        self.made += 1
        uid = f"p{self.made}"
        annotations = {"volcano.sh/task-index": rank} if rank is not None else {}
        p = pod(name=f"{ref.name}-{uid}", namespace=ref.namespace, controller=ref, annotations=annotations, uid=uid,
                node_name=named)
        p["status"] = {"phase": "Pending"}
        self.pods[uid] = p
        return uid, p


def observe(index: MemoryIndex, event: str | None, p: dict, now: float) -> None:
    view = pod_view(p, WorkloadIndex(), 1_000_000)
    assert view is not None
    lifecycle.observe(index, event, view, SNAP, now, POLICY)


def _scheduled(p: dict) -> bool:
    return any(c.get("type") == "PodScheduled" for c in p["status"].get("conditions") or ())


# Which pods each change can apply to, so that a drawn history keeps moving.
ELIGIBLE = {
    "bind": lambda p: not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"),
    "run": lambda p: _scheduled(p) and p["status"]["phase"] == "Pending",
    "end": lambda p: p["status"]["phase"] == "Running",
    "terminate": lambda p: not p["metadata"].get("deletionTimestamp"),
    "delete": lambda p: True,
}


def _same_rank(p: dict, ref, rank: str) -> bool:
    """A pod of the owner's rank that is neither going nor ended. A controller makes a rank's
    next pod once the last one is deleted or going (a gang restart marks the old ones first);
    with two of one rank bound, the memory itself would depend on which one a listing shows
    last, a question of the memory, not of its vacancies."""
    meta = p["metadata"]
    return (meta["ownerReferences"][0]["uid"] == ref.uid and (meta.get("annotations") or {}).get("volcano.sh/task-index") == rank
            and not meta.get("deletionTimestamp") and p["status"]["phase"] not in ("Succeeded", "Failed"))


def replay(index: MemoryIndex, cluster: Cluster, ops: list[tuple], start: float) -> float:
    """Applies `ops` to the cluster and hands each change to the index as its watch would."""
    now = start
    for op in ops:
        now += 10
        kind, *args = op
        if kind in ("start", "wait", "named"):
            ref, rank, node = args
            if rank is not None and any(_same_rank(p, ref, rank) for p in cluster.pods.values()):
                continue  # one live pod per rank, as its controller keeps it
            _, p = cluster.create(ref, rank, node if kind == "named" else None)
            observe(index, "ADDED", p, now)
            if kind == "start":  # scheduled and running at once
                bind(p, node)["status"]["phase"] = "Running"
                observe(index, "MODIFIED", p, now + 1)
            continue
        fits = [uid for uid in sorted(cluster.pods, key=lambda u: int(u[1:])) if ELIGIBLE[kind](cluster.pods[uid])]
        if not fits:
            continue
        uid = fits[args[0] % len(fits)]
        p = cluster.pods[uid]
        if kind == "delete":
            observe(index, DELETED, cluster.pods.pop(uid), now)
            continue
        if kind == "bind":
            bind(p, NODES[args[1] % len(NODES)])
        elif kind == "run":
            p["status"]["phase"] = "Running"
        elif kind == "end":
            p["status"]["phase"] = args[1]
        elif kind == "terminate":
            p["metadata"]["deletionTimestamp"] = "2027-01-15T00:00:00Z"
        observe(index, "MODIFIED", p, now)
    return now


def restarted(running: MemoryIndex, cluster: Cluster, now: float) -> MemoryIndex:
    """A new process: every owner's memory through its PlacementMemory, then the pods as
    they are now."""
    return _started(_written(running), cluster, now)


def _written(running: MemoryIndex) -> MemoryIndex:
    """What a new process loads: every owner's memory encoded as the store writes it, stored
    as the API server keeps it (JSON, nulls dropped), read back as the loader reads it."""
    index = MemoryIndex(restart_hold=running.restart_hold)
    for mem in running.owners.values():
        statuses = encode(durable(mem), STATUS_BUDGET).statuses
        index.adopt(merge([read_object(_stored(mem, n, s)) for n, s in enumerate(statuses, 1)]))
    return index


def _stored(mem, number: int, status: dict) -> dict:
    body = resource_body(mem.owner, number)
    body["metadata"].update(namespace=mem.owner.namespace, name=shard_name(mem.owner, number))
    body["status"] = json.loads(json.dumps({k: v for k, v in status.items() if v is not None}))
    return body


def _started(loaded: MemoryIndex, cluster: Cluster, now: float) -> MemoryIndex:
    """Start-up as handlers.start runs it: the first whole LIST of pods (each object, then the
    listing's end), then the rebuild, before anything reads the claims."""
    for p in cluster.pods.values():
        observe(loaded, LISTED, p, now)
    lifecycle.relisted(loaded, [p["metadata"]["uid"] for p in cluster.pods.values()], now)
    lifecycle.rebuild_vacancies(loaded, now)
    return loaded


def vacant(index: MemoryIndex, part=None) -> dict[str, set[str]]:
    """node -> owners whose home it still is and no pod of theirs holds (a home that moved
    is left in the vacancies until read: every reader skips it)."""
    part = part or index.vacancies
    out: dict[str, set[str]] = {}
    for node, keys in part.vacant.items():
        for key in keys:
            mem = index.owners.get(key)
            if mem is not None and (node in mem.home_counts or node in mem.pool):
                out.setdefault(node, set()).add(key)
    return out


def assert_same_claims(running: MemoryIndex, rebuilt: MemoryIndex, now: float) -> None:
    assert vacant(rebuilt) == vacant(running)
    for ns in ("ns", "team-b"):
        assert vacant(rebuilt, rebuilt.vacancies.of(ns)) == vacant(running, running.vacancies.of(ns)), ns
    assert set(claims(rebuilt, now)) == set(claims(running, now))
    assert claimants_by_node(rebuilt, now) == claimants_by_node(running, now)
    assert rebuilt.disrupted() == running.disrupted()


# -- named cases -----------------------------------------------------------------------------


def _bound(cluster: Cluster, index: MemoryIndex, ref, rank: str | None, node: str, now: float) -> str:
    uid, p = cluster.create(ref, rank)
    observe(index, "ADDED", p, now)
    bind(p, node)["status"]["phase"] = "Running"
    observe(index, "MODIFIED", p, now + 1)
    return uid


def _gone(cluster: Cluster, index: MemoryIndex, uid: str, now: float) -> None:
    observe(index, DELETED, cluster.pods.pop(uid), now)


def _pending(cluster: Cluster, index: MemoryIndex, ref, rank: str | None, now: float) -> str:
    uid, p = cluster.create(ref, rank)
    observe(index, "ADDED", p, now)
    return uid


def gang_evicted(c: Cluster, i: MemoryIndex) -> set:
    """Ranks 0 and 1 ran on n0, n1; rank 0 was evicted and waits: n0 is claimed."""
    uids = [_bound(c, i, JOB, r, f"n{r}", NOW + int(r)) for r in ("0", "1")]
    _gone(c, i, uids[0], NOW + 20)
    _pending(c, i, JOB, "0", NOW + 30)
    return {("n0", JOB.key)}


def idle_owner(c: Cluster, i: MemoryIndex) -> set:
    """A job whose pods all went: its homes are vacant, nobody waits for them."""
    for uid in [_bound(c, i, OTHER, r, f"n{r}", NOW + int(r)) for r in ("0", "1")]:
        _gone(c, i, uid, NOW + 20)
    return set()


def home_moved(c: Cluster, i: MemoryIndex) -> set:
    """Rank 0 went from n2 and came back on n3: n2 is no home any more, n3 is held; rank 1's
    pod is pending (the job is active), its home n4 claimed."""
    old = _bound(c, i, JOB, "0", "n2", NOW)
    gone_one = _bound(c, i, JOB, "1", "n4", NOW + 1)
    _gone(c, i, old, NOW + 10)
    _bound(c, i, JOB, "0", "n3", NOW + 20)
    _gone(c, i, gone_one, NOW + 30)
    _pending(c, i, JOB, "1", NOW + 40)
    return {("n4", JOB.key)}


def pool_waits(c: Cluster, i: MemoryIndex) -> set:
    """A pool ran on n0..n2; all went, one pod waits: its warmest, most recent home is claimed."""
    uids = [_bound(c, i, POOL, None, f"n{k}", NOW + k) for k in range(3)]
    for uid in uids:
        _gone(c, i, uid, NOW + 20)
    _pending(c, i, POOL, None, NOW + 30)
    return {("n2", POOL.key)}


def ended_pod_holds(c: Cluster, i: MemoryIndex) -> set:
    """A rank that Failed and is not deleted yet still holds its node; its sibling went and
    its replacement waits: only the sibling's home is claimed."""
    done = _bound(c, i, JOB, "0", "n0", NOW)
    _bound(c, i, JOB, "1", "n1", NOW)
    c.pods[done]["status"]["phase"] = "Failed"
    observe(i, "MODIFIED", c.pods[done], NOW + 5)
    _gone(c, i, [u for u in c.pods if u != done][0], NOW + 10)
    _pending(c, i, JOB, "1", NOW + 20)
    return {("n1", JOB.key)}


def terminating_holds_nothing(c: Cluster, i: MemoryIndex) -> set:
    """A rank whose pod is terminating: its home is vacant and claimed (the pod is going)."""
    going = _bound(c, i, JOB, "0", "n0", NOW)
    _bound(c, i, JOB, "1", "n1", NOW)
    c.pods[going]["metadata"]["deletionTimestamp"] = "2027-01-15T00:00:00Z"
    observe(i, "MODIFIED", c.pods[going], NOW + 5)
    return {("n0", JOB.key)}


def finished_listed_after_going(c: Cluster, i: MemoryIndex) -> set:
    """Ranks 0 and 1 on n0: rank 0's pod is going, rank 1's Succeeded and is not deleted, so
    n0 is still held; rank 2 waits. The listing shows the going pod first and vacates n0
    before it sees the finished one, which holds the node without binding there again."""
    going = _bound(c, i, JOB, "0", "n0", NOW)
    done = _bound(c, i, JOB, "1", "n0", NOW)
    c.pods[going]["metadata"]["deletionTimestamp"] = "2027-01-15T00:00:00Z"
    observe(i, "MODIFIED", c.pods[going], NOW + 5)
    c.pods[done]["status"]["phase"] = "Succeeded"
    observe(i, "MODIFIED", c.pods[done], NOW + 6)
    _pending(c, i, JOB, "2", NOW + 7)
    return set()


@pytest.mark.parametrize("world", [gang_evicted, idle_owner, home_moved, pool_waits, ended_pod_holds,
                                   terminating_holds_nothing, finished_listed_after_going], ids=lambda f: f.__name__.replace("_", "-"))
def test_a_restart_rebuilds_the_claims_the_running_process_had(world):
    cluster, running = Cluster(), MemoryIndex()
    expected = world(cluster, running)
    now = NOW + 100
    assert set(claims(running, now)) == expected  # the case says what it means
    assert_same_claims(running, restarted(running, cluster, now), now)


def test_a_home_vacated_while_no_process_ran_is_claimed_after_the_start():
    """The pod went between the old leader's end and the new one's listing (a rolling
    upgrade's gap): no process saw it go, yet its home is claimed, as it would have been."""
    cluster, before = Cluster(), MemoryIndex()
    uids = [_bound(cluster, before, JOB, r, f"n{r}", NOW + int(r)) for r in ("0", "1")]
    _pending(cluster, before, JOB, "2", NOW + 5)
    cluster.pods.pop(uids[0])  # deleted while nobody watched
    rebuilt = restarted(before, cluster, NOW + 100)
    assert set(claims(rebuilt, NOW + 100)) == {("n0", JOB.key)}


def test_the_rebuild_keeps_what_the_listing_already_vacated_and_runs_once_harmlessly():
    """A vacancy the listing itself found (a terminating pod) keeps its time; a second
    rebuild changes nothing."""
    cluster, running = Cluster(), MemoryIndex()
    terminating_holds_nothing(cluster, running)
    rebuilt = restarted(running, cluster, NOW + 100)
    before = {n: dict(k) for n, k in rebuilt.vacancies.vacant.items()}
    assert lifecycle.rebuild_vacancies(rebuilt, NOW + 200) == 0
    assert {n: dict(k) for n, k in rebuilt.vacancies.vacant.items()} == before


# -- any history -----------------------------------------------------------------------------

RANKS = st.sampled_from(("0", "1", "2", "3"))
START = st.tuples(st.just("start"), st.sampled_from(OWNERS), RANKS, st.sampled_from(NODES))
WAIT = st.tuples(st.just("wait"), st.sampled_from(OWNERS), RANKS, st.none())
NAMED = st.tuples(st.just("named"), st.sampled_from(OWNERS), RANKS, st.sampled_from(NODES))  # never bound: holds nothing
BIND = st.tuples(st.just("bind"), st.integers(0, 50), st.integers(0, 50))
RUN = st.tuples(st.just("run"), st.integers(0, 50))
END = st.tuples(st.just("end"), st.integers(0, 50), st.sampled_from(("Succeeded", "Failed")))
TERMINATE = st.tuples(st.just("terminate"), st.integers(0, 50))
DELETE = st.tuples(st.just("delete"), st.integers(0, 50))
history_ops = st.lists(st.one_of(START, START, WAIT, NAMED, BIND, RUN, END, TERMINATE, DELETE, DELETE), min_size=4,
                       max_size=60)
# The gap writes no memory: a bind no process saw, of a pod gone before the next listing, is
# lost to any design that keeps no log of it; what went and what waits is all the LIST shows.
gap_ops = st.lists(st.one_of(WAIT, NAMED, RUN, END, TERMINATE, DELETE, DELETE), max_size=20)


def _ranked(ops: list[tuple]) -> list[tuple]:
    """A rankless owner's pods carry no rank."""
    return [(op[0], op[1], None, op[3]) if op[0] in ("start", "wait", "named") and op[1].key not in RANKED else op
            for op in ops]


@hsettings(max_examples=300, deadline=None)
@given(history=history_ops, gap=gap_ops)
def test_rebuilt_claims_equal_the_running_index(history, gap):
    """Any history of pods (created, bound, running, ended, terminating, deleted; a node
    named and never bound), watched by one process that wrote its memory; then a restart,
    during which `gap` happened while no process watched (a rolling upgrade's gap). The new
    process loads the memory and lists the pods; its vacant homes, claims and the owners
    each claimed home waits for equal those of a process that watched it all."""
    cluster, running = Cluster(), MemoryIndex()
    now = replay(running, cluster, _ranked(history), NOW)
    written = _written(running)  # what the old leader wrote before it went
    now = replay(running, cluster, _ranked(gap), now)  # the watcher that never stopped sees the gap
    assert_same_claims(running, _started(written, cluster, now), now)


@hsettings(max_examples=300, deadline=None)
@given(history=history_ops, later=st.sampled_from((0.0, 5.0, 30.0, 59.0, 61.0, 600.0)))
def test_rebuilt_restart_holds_equal_the_running_index(history, later):
    """The same with a restart hold (issue 44): an owner whose pods all went before they
    ended is still expected back for a while, and a new process holds the same owners for
    the same time, the stored lastSeen being the hold's clock. Pods that go while no process
    runs are not held by the new one: it cannot tell them from a workload deleted for good."""
    cluster, running = Cluster(), MemoryIndex(restart_hold=60.0)
    now = replay(running, cluster, _ranked(history), NOW)
    assert_same_claims(running, restarted(running, cluster, now), now + later)


def every_vacant_home_judged(index: MemoryIndex, now: float) -> list[tuple[str, str]]:
    """The rule read literally (behaviour.md "Claimed homes"), one vacant home at a time:
    most recently vacated first, a ranked owner's home claimed while it is active, a pool's
    while its pending pods are expected on it."""
    out = []
    for node in reversed(index.vacated_order):
        for key in index.vacant.get(node, ()):
            mem = index.owners.get(key)
            if mem is None:
                continue
            if node in mem.home_counts:
                if index.active(key, now):
                    out.append((node, key))
            elif node in mem.pool and node in pool_claims(index, mem, now):
                out.append((node, key))
    return out


@hsettings(max_examples=300, deadline=None)
@given(history=history_ops, later=st.sampled_from((0.0, 30.0, 61.0)), hold=st.sampled_from((0.0, 60.0)))
def test_claims_judge_only_owners_that_can_claim_and_find_what_judging_every_vacant_home_finds(history, later, hold):
    """`claims` looks only at owners that can claim (active, or a pool with pending pods):
    at 5,000 nodes a restarted process finds 980,000 homes vacant and judging each on every
    admission took over half its CPU. It finds the same claims, nodes in the same order."""
    cluster, running = Cluster(), MemoryIndex(restart_hold=hold)
    now = replay(running, cluster, _ranked(history), NOW) + later
    # most histories claim nothing: steer the search towards the ones that claim much, pools included
    expected = every_vacant_home_judged(running, now)
    target(float(len(expected)), label="claims")
    target(float(sum(1 for _, key in expected if key == POOL.key)), label="pool claims")
    for index in (running, restarted(running, cluster, now)):
        found, expected = list(claims(index, now)), every_vacant_home_judged(index, now)
        assert [n for n, _ in found] == [n for n, _ in expected]
        assert sorted(found) == sorted(expected)


# -- the bulk insert is the one-by-one insert ----------------------------------------------

OWNER_KEYS = ("ns/a", "ns/b", "team-b/c", "team-c/d")


@hsettings(max_examples=300, deadline=None)
@given(before=st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(OWNER_KEYS)), max_size=8),
       homes=st.dictionaries(st.sampled_from(OWNER_KEYS),
                             st.dictionaries(st.sampled_from(NODES), st.integers(0, 5).map(float), max_size=6), max_size=4))
def test_vacating_all_at_once_leaves_what_vacating_one_by_one_in_time_order_does(before, homes):
    """Vacancies.vacate_all (start-up's rebuild) against `vacate` called for each home in the
    order of when a pod was last there: the same vacant homes, the same owners' sets and the
    same "most recently vacated" order, for the whole cluster and each namespace apart."""
    def state(v: Vacancies) -> tuple:
        parts = {ns: (p.vacant, p.by_owner, list(p.order.items())) for ns, p in v.namespaces.items()}
        return v.vacant, v.by_owner, list(v.order.items()), parts

    bulk, one_by_one = Vacancies(), Vacancies()
    for i, (node, key) in enumerate(before):  # vacancies the listing already made, earlier
        bulk.vacate(node, key, i)
        one_by_one.vacate(node, key, i)
    homes = {k: {n: at for n, at in nodes.items() if k not in bulk.vacant.get(n, {})} for k, nodes in homes.items()}
    assert bulk.vacate_all(homes, 100.0) == sum(map(len, homes.values()))
    for _, node, key in sorted((at, n, k) for k, nodes in homes.items() for n, at in nodes.items()):
        one_by_one.vacate(node, key, 100.0)
    assert state(bulk) == state(one_by_one)
