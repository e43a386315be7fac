"""Claimed homes, case by case: which vacant homes a pod keeps off (engine/placement/claimed.py) and
what the decision then carries, for a rank whose home is held, cordoned or faulted, for
ranked owners and pools, the pod's own gang and other workloads."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.config import Preferences, Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.memory.siblings import sibling_homes
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.claimed import claimants_by_node, claimed_homes, others_claims
from homing.engine.placement.decide import decide

from .helpers import NOW, by_role, npu_pod, owner

IMAGE = "registry.example.com/ai/train:24.1"
JOB = owner(kind="Job", name="llama", api_version="batch.volcano.sh/v1alpha1", uid="claimed-job")
OTHER = owner(kind="Job", name="other", api_version="batch.volcano.sh/v1alpha1", uid="claimed-other")
POOL = owner(kind="Deployment", name="infer", uid="claimed-pool")


@dataclass
class World:
    """The job's ranks 0..3 on n0..n3; which of its pods live (rank -> node or None for
    pending), the other workloads' vacant homes, and what they wait for."""

    live: dict = field(default_factory=dict)  # rank -> node | None (pending) | "terminating:<node>"
    other_homes: tuple = ()  # OTHER's vacant homes
    other_waits: bool = False  # OTHER has a pending pod
    other_ended: bool = False  # OTHER's only pod has Succeeded
    pool_homes: tuple = ()  # POOL's vacant homes, warmest first
    pool_pending: int = 0
    pool_promised: tuple = ()
    live_generation: int | None = None  # the live pods' restart (identity/generation.py)


def index_of(w: World) -> MemoryIndex:
    index = MemoryIndex()
    for r in range(4):
        index.record_bind(JOB, f"worker/{r}", f"n{r}", (), NOW - 600)
        index.vacate(f"n{r}", JOB.key, NOW - 60)
    for r, where in w.live.items():
        terminating = isinstance(where, str) and where.startswith("terminating:")
        node = where.split(":", 1)[1] if terminating else where
        index.pod_seen(f"job-{r}", LivePod(JOB.key, f"worker/{r}", node, terminating=terminating, generation=w.live_generation))
        if node and not terminating:
            index.reoccupy(node, JOB.key)
    for i, node in enumerate(w.other_homes):
        index.record_bind(OTHER, f"worker/{i}", node, (), NOW - 900)
        index.vacate(node, OTHER.key, NOW - 100 + i)
    if w.other_waits:
        index.pod_seen("other-pending", LivePod(OTHER.key, "worker/0", None))
    if w.other_ended:
        index.pod_seen("other-done", LivePod(OTHER.key, "worker/0", None, ended=True))
    for i, node in enumerate(w.pool_homes):
        index.record_bind(POOL, None, node, (), NOW - 500 + i)
        index.mark_warm(POOL, None, node, NOW - 500 + i)
        index.vacate(node, POOL.key, NOW - 50 + i)
    for i in range(w.pool_pending):
        index.pod_seen(f"pool-pending-{i}", LivePod(POOL.key, None, None))
    for node in w.pool_promised:
        index.promised.make(POOL.key, node, NOW, 60)
    return index


@pytest.mark.parametrize(
    "world, rank, claimed",
    [
        pytest.param(World(), "worker/0", {"n1", "n2", "n3"}, id="gang-restart-siblings-not-created-yet"),
        pytest.param(World(live={1: "n1"}), "worker/0", {"n2", "n3"}, id="a-running-sibling-holds-its-home"),
        pytest.param(World(live={2: "terminating:n2"}), "worker/0", {"n1", "n2", "n3"}, id="a-terminating-sibling-holds-nothing"),
        pytest.param(World(live={1: None}), "worker/0", {"n1", "n2", "n3"}, id="a-pending-sibling-claims-its-home"),
        pytest.param(World(other_homes=("m0", "m1"), other_waits=True), "worker/0", {"n1", "n2", "n3", "m0", "m1"},
                     id="another-job-waiting-claims-its-homes"),
        pytest.param(World(other_homes=("m0",)), "worker/0", {"n1", "n2", "n3"}, id="another-job-with-no-pod-claims-nothing"),
        pytest.param(World(other_homes=("m0",), other_ended=True), "worker/0", {"n1", "n2", "n3"},
                     id="another-job-that-finished-claims-nothing"),
        pytest.param(World(pool_homes=("p0", "p1", "p2"), pool_pending=2, pool_promised=("p0",)), "worker/0",
                     {"n1", "n2", "n3", "p0", "p2"}, id="a-pool-claims-its-promised-then-most-recent-homes"),
        pytest.param(World(pool_homes=("p0", "p1")), "worker/0", {"n1", "n2", "n3"}, id="a-pool-with-nothing-pending"),
        pytest.param(World(), None, set(), id="a-rankless-pod-of-the-job-leaves-its-ranks-to-them"),
    ],
)
def test_claimed_homes(world: World, rank: str | None, claimed: set[str]):
    index = index_of(world)
    own_home = "n0" if rank == "worker/0" else None
    siblings = sibling_homes(index.owner(JOB.key), 0, own_home, 256)[0] if rank is not None else ()
    got = claimed_homes(index, JOB.key, siblings, own_home, others_claims(index, JOB.key, NOW), 256)
    assert set(got) == claimed
    assert own_home not in got


# The gang restarted while homing's watch ran behind: the old pods still look live and bound
# when the new generation's rank 0 is admitted.
@pytest.mark.parametrize(
    "live_generation, admitted, claimed",
    [
        pytest.param(0, 1, {"n1", "n2", "n3"}, id="an-earlier-restarts-pods-hold-nothing"),
        pytest.param(1, 1, {"n3"}, id="the-same-restarts-pods-hold-their-homes"),
        pytest.param(2, 1, {"n3"}, id="a-later-restarts-pods-hold-their-homes"),
        pytest.param(None, 1, {"n3"}, id="pods-of-unknown-restart-hold-their-homes"),
        pytest.param(0, None, {"n3"}, id="an-admitted-pod-of-unknown-restart-trusts-the-watch"),
    ],
)
def test_claims_across_a_restart_homing_has_not_seen(live_generation, admitted, claimed):
    index = index_of(World(live={1: "n1", 2: "n2"}, live_generation=live_generation))
    siblings = sibling_homes(index.owner(JOB.key), 0, "n0", 256)[0]
    assert set(claimed_homes(index, JOB.key, siblings, "n0", others_claims(index, JOB.key, NOW), 256, admitted)) == claimed


def test_a_pool_pods_own_homes_are_left_to_its_promises():
    index = index_of(World(live={1: None}, pool_homes=("p0", "p1"), pool_pending=2, other_homes=("m0",), other_waits=True))
    assert set(claimed_homes(index, POOL.key, (), None, others_claims(index, POOL.key, NOW), 256)) == {"n0", "n1", "n2", "n3", "m0"}


def test_claimants_by_node_names_who_waits():
    index = index_of(World(live={1: None}, other_homes=("n3",), other_waits=True))
    by_node = claimants_by_node(index, NOW)
    assert by_node["n0"] == {JOB.key} and by_node["n3"] == {JOB.key, OTHER.key}


# -- the decision for a rank whose home is taken -----------------------------------------------------

def cluster(home_health: Health = Health.HEALTHY) -> ClusterSnapshot:
    """n0..n3 the job's homes (holding its image), c0, c1 cold, w0 warm and nobody's home."""
    nodes = {f"n{i}": NodeState(f"n{i}", Health.HEALTHY, images=frozenset({IMAGE})) for i in range(4)}
    nodes["n0"] = NodeState("n0", home_health, images=frozenset({IMAGE}))
    nodes |= {n: NodeState(n, Health.HEALTHY) for n in ("c0", "c1")}
    nodes["w0"] = NodeState("w0", Health.HEALTHY, images=frozenset({IMAGE}))
    return ClusterSnapshot(nodes)


def rank0_pod() -> dict:
    p = npu_pod(name="llama-worker-0", controller=JOB, annotations={"volcano.sh/task-spec": "worker", "volcano.sh/task-index": "0"})
    p["spec"]["containers"][0]["image"] = IMAGE
    return p


@pytest.mark.parametrize(
    "how, snapshot, fault, home_term, keep_off, warm",
    [
        # its own home stays warm for it (the scheduler finds it full); the siblings' are not
        pytest.param("held", cluster(), False, ("n0",), {"n1", "n2", "n3"}, {"n0", "w0"}, id="home-held-by-another-pod"),
        pytest.param("cordoned", cluster(Health.UNAVAILABLE), False, None, {"n1", "n2", "n3"}, {"w0"}, id="home-cordoned"),
        pytest.param("faulted", cluster(), True, None, {"n0", "n1", "n2", "n3"}, {"w0"}, id="home-faulted"),
        pytest.param("unhealthy", cluster(Health.UNHEALTHY), False, None, {"n0", "n1", "n2", "n3"}, {"w0"}, id="home-unhealthy"),
    ],
)
def test_a_rank_whose_home_is_taken_keeps_off_its_siblings_homes(how, snapshot, fault, home_term, keep_off, warm):
    index = index_of(World())
    if how == "held":
        index.occupy("stranger", "n0")
    if fault:
        index.record_fault(JOB.key, "worker/0", "n0", NOW - 10, 3600)
    d = decide(rank0_pod(), index, WorkloadIndex(), snapshot, Settings(), NOW)
    terms = by_role(d.terms)
    assert (terms["home"].values if "home" in terms else None) == home_term
    assert set(terms["claimed"].values) == keep_off and terms["claimed"].weight == Settings().weights.claimed
    assert set(terms["image-warm"].values) == warm, "a sibling's home is never image-warm"
    assert "claimed-homes" in d.prefer


def test_a_restarted_gangs_rank_keeps_off_homes_its_old_siblings_seem_to_hold():
    """The failure the lagging cluster test shows: every old sibling still looked bound, so
    no home was claimed and image locality sent rank 0 to a sibling's warm home."""
    index = index_of(World(live={1: "n1", 2: "n2", 3: "n3"}, live_generation=0))
    pod = rank0_pod()
    pod["metadata"]["annotations"]["volcano.sh/job-version"] = "1"
    d = decide(pod, index, WorkloadIndex(), cluster(Health.UNAVAILABLE), Settings(), NOW)
    terms = by_role(d.terms)
    assert set(terms["claimed"].values) == {"n1", "n2", "n3"}
    assert not {"n1", "n2", "n3"} & set(terms.get("image-warm").values if "image-warm" in terms else ())
    assert not d.warnings


def test_an_unreadable_restart_count_is_warned_and_trusts_the_watch():
    index = index_of(World(live={1: "n1", 2: "n2", 3: "n3"}, live_generation=0))
    pod = rank0_pod()
    pod["metadata"]["annotations"]["volcano.sh/job-version"] = "one"
    d = decide(pod, index, WorkloadIndex(), cluster(Health.UNAVAILABLE), Settings(), NOW)
    assert any("volcano.sh/job-version 'one'" in w for w in d.warnings), d.warnings
    assert "claimed" not in by_role(d.terms), "the siblings look live: nothing is claimed, as before"


def test_switched_off_the_siblings_homes_are_warm_again():
    d = decide(rank0_pod(), index_of(World()), WorkloadIndex(), cluster(), Settings(preferences=Preferences(claimed_homes=False)), NOW)
    terms = by_role(d.terms)
    assert "claimed" not in terms
    assert {"n1", "n2", "n3"} <= set(terms["image-warm"].values)


def test_tenant_strict_image_warm_reads_only_the_namespaces_own_memory():
    index = index_of(World())
    index.ran_images((IMAGE,), "c0", NOW - 5, "ns")
    settings = Settings(preferences=Preferences(image_warm_namespace_only=True))
    terms = by_role(decide(rank0_pod(), index, WorkloadIndex(), cluster(), settings, NOW).terms)
    assert terms["image-warm"].values == ("c0",), "w0 is known only from its kubelet's report"


# -- the counts the claims read, kept as pods come and go ----------------------------------------------

_STATES = st.sampled_from([(None, False, False), ("n1", False, False), ("n1", True, False), (None, False, True),
                           ("n2", False, True), (None, True, False)])  # (node, terminating, ended)


@hsettings(max_examples=200, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["a", "b"]), st.one_of(st.none(), _STATES)), max_size=40))
def test_active_and_pending_counts_follow_every_change(steps):
    index = MemoryIndex()
    for uid, owner_key, state in steps:
        if state is None:
            index.pod_gone(f"p{uid}")
        else:
            node, terminating, ended = state
            index.pod_seen(f"p{uid}", LivePod(owner_key, None, node, terminating=terminating, ended=ended))
    for key in ("a", "b"):
        pods = [index.live[u] for u in index.live_by_owner.get(key, ())]
        # a terminating pod that had not ended is going with a restart: its owner is still expected
        assert index.active(key, NOW) == any(not p.ended for p in pods)
        assert index.pending_count(key) == sum(p.pending for p in pods)


# -- across restarts: a later admitted generation never claims fewer homes -------------------------

_LIVE = st.dictionaries(st.integers(1, 3), st.tuples(st.sampled_from(["n1", "n2", "n3", "c0"]), st.one_of(st.none(), st.integers(0, 3))))


@hsettings(max_examples=200, deadline=None)
@given(live=_LIVE, admitted=st.integers(0, 3))
def test_claims_grow_with_the_admitted_restart(live, admitted):
    index = index_of(World())
    for r, (node, generation) in live.items():
        index.pod_seen(f"job-{r}", LivePod(JOB.key, f"worker/{r}", node, generation=generation))
    siblings = sibling_homes(index.owner(JOB.key), 0, "n0", 256)[0]
    trusting = set(claimed_homes(index, JOB.key, siblings, "n0", others_claims(index, JOB.key, NOW), 256))
    now = set(claimed_homes(index, JOB.key, siblings, "n0", others_claims(index, JOB.key, NOW), 256, admitted))
    later = set(claimed_homes(index, JOB.key, siblings, "n0", others_claims(index, JOB.key, NOW), 256, admitted + 1))
    assert trusting <= now <= later <= {"n1", "n2", "n3"}
    # a home stays held exactly while some pod on it is of this restart or an unknown one
    holders = {node for node, generation in live.values() if generation is None or generation >= admitted}
    assert now == {"n1", "n2", "n3"} - holders


class CountingOwners(dict):
    """An index's owners, counting how often the claims look one up."""

    looked = 0

    def get(self, key, default=None):
        CountingOwners.looked += 1
        return super().get(key, default)


def test_claims_look_at_each_owner_once_not_at_each_of_its_vacant_homes():
    """A restarted process finds every home no live pod holds vacant (980,000 of a million
    ranks at 5,000 nodes): the claims judged each of them, on every admission and every
    pass of the scale-in marks, more than half the operator's CPU at that scale. An owner
    is judged once; one that cannot claim (no pod, no hold) costs nothing more."""
    index = index_of(World(live={0: "n0"}))  # the job is active: n1..n3 are claimed
    for o in range(20):  # long-gone owners, each a home on every node
        gone = owner(kind="Job", name=f"gone-{o}", api_version="batch.volcano.sh/v1alpha1", uid=f"gone-{o}")
        for n in range(50):
            index.record_bind(gone, f"worker/{n}", f"m{n}", (), NOW - 7200)
            index.vacate(f"m{n}", gone.key, NOW - 3600)
    index.owners = CountingOwners(index.owners)
    CountingOwners.looked = 0
    assert claimants_by_node(index, NOW) == {f"n{r}": {JOB.key} for r in (1, 2, 3)}
    assert CountingOwners.looked <= len(index.vacant_by_owner)  # 21 owners, not 1,003 vacant homes


def test_an_admission_reads_other_owners_claims_in_one_pass_without_its_own(monkeypatch):
    """At 5,000 nodes a restarting 4,096-rank gang claims 4,096 vacant homes: each of its
    admissions walked them all, once for the homes to keep off and once more for the restart
    hold, skipping its own owner's claims one by one (its own come from its siblings).
    Now one pass per admission, and the admitted owner's claims are never walked."""
    from homing.engine.placement import claimed as claimed_module

    index = index_of(World(live={1: None}, other_homes=("c0",), other_waits=True))  # the job restarting: n0..n3 vacant
    index.restart_hold = 60.0
    passes: list[list[tuple[str, str]]] = []
    real = claimed_module.claims

    def counted(*args, **kwargs):
        passes.append([])
        for pair in real(*args, **kwargs):
            passes[-1].append(pair)
            yield pair

    monkeypatch.setattr(claimed_module, "claims", counted)
    d = decide(rank0_pod(), index, WorkloadIndex(), cluster(), Settings(), NOW)
    assert set(by_role(d.terms)["claimed"].values) == {"n1", "n2", "n3", "c0"}  # the same homes kept off
    assert len(passes) == 1
    assert all(key != JOB.key for pass_ in passes for _, key in pass_)
