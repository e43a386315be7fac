"""behaviour.md "Beyond the home" displace few workloads: free capacity, who can be displaced where, which
victim a burst agrees on, and the term the replicas get. Table-driven; no cluster."""
from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.config import Preferences, Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import Burst, Load, pod_load
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.beyond_home import every_victim, eviction_victims
from homing.engine.placement.decide import decide
from homing.engine.placement.displacement import choose, free_nodes, free_slots, victims

from .helpers import NOW, owner, pod

NPU = "huawei.com/Ascend910"
DEFAULTS = Settings()
PREFIXES = ("huawei.com/",)


def cluster(n: int = 6, npus: int | None = 8, sick: tuple[str, ...] = ()) -> ClusterSnapshot:
    return ClusterSnapshot({f"n{i}": NodeState(f"n{i}", Health.UNHEALTHY if f"n{i}" in sick else Health.HEALTHY,
                                               npus=npus) for i in range(n)})


@pytest.mark.parametrize(
    "spec, load",
    [
        pytest.param({"priority": 1000, "containers": [{"resources": {"requests": {NPU: "8"}}}]}, (1000, 8), id="plain"),
        pytest.param({"containers": [{"resources": {"requests": {NPU: "2", "cpu": "4"}}},
                                     {"resources": {"requests": {NPU: "1"}}}]}, (0, 3), id="two-containers-no-priority"),
        pytest.param({"priority": True, "containers": [{"resources": {"requests": {NPU: "x"}}}]}, (0, 0), id="junk"),
        pytest.param({"containers": [{"resources": {"requests": ["nonsense"]}}]}, (0, 0), id="requests-a-list"),
    ],
)
def test_pod_load(spec, load):
    got = pod_load({"spec": spec}, "ns/o", PREFIXES)
    assert (got.priority, got.npus) == load


@pytest.mark.parametrize(
    "used, npus, sick, capacity, slots",
    [
        pytest.param({}, 8, (), 8, 6, id="empty-cluster"),
        pytest.param({}, 2, (), 8, 24, id="four-per-node"),
        pytest.param({f"n{i}": 8 for i in range(6)}, 8, (), 8, 0, id="all-full"),
        pytest.param({**{f"n{i}": 8 for i in range(6)}, "n3": 4}, 4, (), 8, 1, id="half-node-for-half-pod"),
        pytest.param({**{f"n{i}": 8 for i in range(6)}, "n3": 4}, 8, (), 8, 0, id="half-node-not-enough"),
        pytest.param({f"n{i}": 8 for i in range(5)}, 8, ("n5",), 8, 0, id="only-free-node-unhealthy"),
        pytest.param({}, 8, (), None, 0, id="no-accelerators-reported"),
    ],
)
def test_free_slots(used, npus, sick, capacity, slots):
    assert free_slots(cluster(npus=capacity, sick=sick), used, npus, enough=100) == slots


def test_free_slots_stops_counting_at_enough():
    assert free_slots(cluster(npus=8), {}, 8, enough=2) == 2


def test_victims_are_single_lower_priority_workloads_per_node():
    loads = {
        "n0": [Load("ns/train-a", 100, 8)],
        "n1": [Load("ns/train-a", 100, 8)],
        "n2": [Load("ns/train-b", 100, 4), Load("ns/train-c", 100, 4)],  # two workloads: not one victim
        "n3": [Load("ns/infer", 1000, 8)],  # higher priority: not a victim
        "n4": [Load("ns/train-b", 100, 4), Load("ns/infer", 1000, 4)],  # freeing b leaves only 4
        "n5": [Load("ns/train-c", 100, 8)],
    }
    used = {n: sum(ld.npus for ld in lds) for n, lds in loads.items()}
    assert victims(cluster(), loads, used, 1000, 8) == {"ns/train-a": ["n0", "n1"], "ns/train-c": ["n5"]}
    assert victims(cluster(), loads, used, 1000, 4) == {"ns/train-a": ["n0", "n1"], "ns/train-b": ["n4"],
                                                        "ns/train-c": ["n5"]}


CANDIDATES = {"ns/big": ["n0", "n1", "n2", "n3"], "ns/mid": ["n4", "n5"], "ns/small": ["n6"]}
PRIORITIES = {"ns/big": 100, "ns/mid": 50, "ns/small": 100}


@pytest.mark.parametrize(
    "disrupted, burst, victim",
    [
        pytest.param(set(), Burst(NOW, count=1), "ns/small", id="smallest-that-covers-one"),
        pytest.param(set(), Burst(NOW, count=2), "ns/mid", id="smallest-that-covers-two"),
        pytest.param(set(), Burst(NOW, count=9), "ns/big", id="none-covers-the-largest"),
        pytest.param({"ns/big"}, Burst(NOW, count=1), "ns/big", id="already-disrupted-first"),
        pytest.param(set(), Burst(NOW, count=3, victim="ns/mid", sent=1), "ns/mid", id="the-burst-keeps-its-victim"),
        pytest.param(set(), Burst(NOW, count=3, victim="ns/mid", sent=2), "ns/big", id="until-its-nodes-are-used-up"),
        pytest.param(set(), Burst(NOW, count=2, victim="ns/gone", sent=0), "ns/mid", id="a-vanished-victim-is-replaced"),
    ],
)
def test_choose(disrupted, burst, victim):
    assert choose(CANDIDATES, PRIORITIES, disrupted, burst) == victim


@pytest.mark.parametrize(
    "mine, disrupted, victim",
    [
        pytest.param(frozenset({"n2", "n3"}), set(), "ns/big", id="the-one-on-my-homes"),
        pytest.param(frozenset({"n1", "n5", "n4"}), set(), "ns/mid", id="the-one-on-most-of-my-homes"),
        pytest.param(frozenset({"n2"}), {"ns/small"}, "ns/small", id="already-disrupted-still-first"),
        pytest.param(frozenset({"n9"}), set(), "ns/small", id="none-on-my-homes-smallest"),
    ],
)
def test_choose_prefers_the_workload_on_the_pods_own_homes(mine, disrupted, victim):
    """Next morning's inference replicas are promised yesterday's nodes, which a training
    gang holds now: displacing that gang keeps both images where they are."""
    assert choose(CANDIDATES, PRIORITIES, disrupted, Burst(NOW, count=1), mine) == victim


def test_a_pool_home_held_by_training_names_that_training_as_victim():
    index, snap = full_cluster()
    deploy = owner(kind="Deployment", name="infer", uid="yesterday")
    index.record_bind(deploy, None, "n4", (), NOW - 3600)  # yesterday's replica ran where train-c runs now
    d = admit(index, snap, replica(deploy, 0))
    assert d.victim == "ns/train-c"


def test_lowest_priority_breaks_a_tie_of_size():
    assert choose({"ns/a": ["n0"], "ns/b": ["n1"]}, {"ns/a": 100, "ns/b": 10}, set(), Burst(NOW, count=1)) == "ns/b"


def test_nothing_left_to_displace():
    burst = Burst(NOW, count=2, victim="ns/a", sent=1)
    assert choose({"ns/a": ["n0"]}, {}, set(), burst) is None and burst.used == {"ns/a"}


# -- decisions: a burst of inference replicas agrees on one training job -----------------------------

def full_cluster() -> tuple[MemoryIndex, ClusterSnapshot]:
    """Six 8-NPU nodes held by three training jobs (2 nodes each), priority 100."""
    index = MemoryIndex()
    for i, job in enumerate(["a", "a", "b", "b", "c", "c"]):
        index.occupy(f"p{i}", f"n{i}", Load(f"ns/train-{job}", 100, 8))
    return index, cluster()


def replica(deploy, i: int, priority: int = 1000) -> dict:
    p = pod(name=f"infer-{i}", controller=deploy, resources={NPU: "8"})
    p["spec"]["containers"][0]["resources"]["requests"] = {NPU: "8"}
    p["spec"]["priority"] = priority
    return p


def admit(index, snap, p, settings=DEFAULTS, now=NOW):
    d = decide(p, index, WorkloadIndex(), snap, settings, now)
    if d.burst is not None:
        index.keep_burst(d.burst)  # what the adapter keeps
    return d


def test_the_replicas_of_a_burst_displace_one_workload_until_its_nodes_are_used_up():
    index, snap = full_cluster()
    deploy = owner(kind="Deployment", name="infer", uid="dep")
    got = [admit(index, snap, replica(deploy, i), now=NOW + i) for i in range(5)]
    victims_chosen = [d.victim for d in got]
    assert victims_chosen[:2] == [victims_chosen[0]] * 2, "the first two agree"
    assert victims_chosen[2] == victims_chosen[3] != victims_chosen[0], "then the next one, together"
    terms = {t.role: t for t in got[0].terms}
    assert terms["displace"].values == ("n0", "n1") and terms["displace"].weight == Settings().weights.displace
    assert "displace-few" in got[0].prefer
    assert '"displace":"ns/train-a"' in got[0].annotations()["homing.io/decision"]


def test_two_services_scaling_out_together_displace_one_workload():
    """Issue 44's crowded day: two services of one namespace and priority scaled out in the
    same minute, each burst chose the gang on its own homes, and two gangs restarted for a few
    replicas. Their pods are one burst now: the second service's replicas join the victim the
    first chose while its nodes last."""
    index, snap = full_cluster()
    qwen, bert = owner(kind="Deployment", name="qwen", uid="qwen"), owner(kind="Deployment", name="bert", uid="bert")
    index.record_bind(qwen, None, "n0", (), NOW - 3600)  # yesterday's replicas ran where train-a runs now
    index.record_bind(bert, None, "n2", (), NOW - 3600)  # and where train-b runs
    got = [admit(index, snap, replica(qwen, 0), now=NOW), admit(index, snap, replica(bert, 0), now=NOW + 1)]
    assert [d.victim for d in got] == ["ns/train-a", "ns/train-a"]
    later = admit(index, snap, replica(bert, 1), now=NOW + 60)  # a burst of its own, after a pause
    assert later.victim == "ns/train-b"


def test_services_of_other_priorities_or_namespaces_are_bursts_of_their_own():
    index, snap = full_cluster()
    qwen = owner(kind="Deployment", name="qwen", uid="qwen2")
    bert = owner(kind="Deployment", name="bert", uid="bert2")
    index.record_bind(qwen, None, "n0", (), NOW - 3600)
    index.record_bind(bert, None, "n2", (), NOW - 3600)
    admit(index, snap, replica(qwen, 0), now=NOW)
    assert admit(index, snap, replica(bert, 0, priority=900), now=NOW + 1).victim == "ns/train-b"
    assert len(index.bursts) == 2


def test_a_disrupted_workload_is_displaced_first():
    index, snap = full_cluster()
    other = owner(kind="Job", name="train-c", uid="train-c")
    index.record_bind(other, "0", "n5", (), NOW)
    index.vacate("n5", "ns/train-c", NOW)  # it lost a pod already
    d = admit(index, snap, replica(owner(kind="Deployment", uid="dep2"), 0))
    assert d.victim == "ns/train-c"


def test_no_displacement_term_for_a_pod_of_no_higher_priority():
    index, snap = full_cluster()
    d = admit(index, snap, replica(owner(kind="Deployment", uid="same"), 0, priority=100))
    assert "displace" not in {t.role for t in d.terms} and d.victim is None


def test_with_room_free_the_term_names_full_nodes_only_and_uses_up_nothing():
    """The scheduler, not the webhook, decides which replica is left pending: each gets the
    term, which changes nothing while it fits a free node (the named nodes are full)."""
    index, snap = full_cluster()
    index.occupy("p0", None)  # n0 free
    d = admit(index, snap, replica(owner(kind="Deployment", uid="room"), 0))
    terms = {t.role: t.values for t in d.terms}
    assert "n0" not in terms["displace"] and d.burst.sent == 0


def preferred_score(d, node: str) -> int:
    """What a scheduler's node-affinity score adds for `node` (hostname terms only)."""
    return sum(t.weight for t in d.terms if (node in t.values) == (t.operator.value == "In"))


def test_free_room_outranks_the_victims_nodes_once_an_eviction_frees_them():
    """A replica still pending when a sibling's eviction frees the victim's nodes took one
    of them (displace 12) over a node that had been free all along: the evicted gang then
    found its home taken. Free-room (15) names the nodes free at admission."""
    index, snap = full_cluster()
    index.occupy("p0", None)  # n0 free
    d = admit(index, snap, replica(owner(kind="Deployment", uid="room"), 0))
    terms = {t.role: t for t in d.terms}
    assert terms["free-room"].values == ("n0",) and terms["free-room"].weight == Settings().weights.free_room
    assert all(preferred_score(d, "n0") > preferred_score(d, n) for n in terms["displace"].values)


def test_free_room_leaves_out_vacant_homes():
    index, snap = full_cluster()
    gone = owner(kind="Job", name="gone", uid="gone")
    index.record_bind(gone, "0", "n0", (), NOW - 100)
    index.occupy("p0", None)
    index.vacate("n0", gone.key, NOW - 50)  # n0 is free and the vacant home of a job that will return
    index.occupy("p1", None)  # n1 is free and nobody's home
    d = admit(index, snap, replica(owner(kind="Deployment", uid="vh"), 0))
    assert {t.role: t.values for t in d.terms}["free-room"] == ("n1",)


def test_free_room_can_be_switched_off():
    index, snap = full_cluster()
    index.occupy("p0", None)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="off"), 0),
              settings=Settings(preferences=Preferences(free_room=False)))
    roles = {t.role for t in d.terms}
    assert "displace" in roles and "free-room" not in roles


def test_no_free_room_term_without_a_victim():
    index, snap = full_cluster()
    index.occupy("p0", None)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="same"), 0, priority=100))
    assert not {"free-room", "displace"} & {t.role for t in d.terms}


def test_displacement_can_be_switched_off():
    index, snap = full_cluster()
    d = admit(index, snap, replica(owner(kind="Deployment", uid="off"), 0),
              settings=Settings(preferences=Preferences(displace_few=False)))
    assert "displace" not in {t.role for t in d.terms}


def test_occupancy_accounting_follows_pods():
    index = MemoryIndex()
    index.occupy("p", "n1", Load("ns/a", 1, 8))
    index.occupy("p", "n2", Load("ns/a", 1, 8))
    assert index.node_used == {"n2": 8} and index.node_loads() == {"n2": [Load("ns/a", 1, 8)]}
    index.occupy("p", None)
    assert index.node_used == {} and index.node_loads() == {} and index.occupants == {}


def test_a_workload_that_restarted_elsewhere_is_not_disrupted_any_more():
    """Its old homes were vacated, then its ranks bound elsewhere: it runs whole again, and
    displacing it again would restart it a second time."""
    index, snap = full_cluster()
    moved = owner(kind="Job", name="train-a", uid="train-a")
    index.record_bind(moved, "0", "old-node", (), NOW - 100)
    index.vacate("old-node", moved.key, NOW - 50)
    assert index.disrupted() == {moved.key}
    index.record_bind(moved, "0", "n0", (), NOW - 10)  # the rank's home moved with the restart
    assert index.disrupted() == set()


def test_when_nothing_is_free_the_victims_nodes_outweigh_keeping_clear():
    """Keeping clear of vacant homes alone would point the eviction at any node whose owner
    runs there; with the victim named, its nodes outweigh that term."""
    index, snap = full_cluster()
    other = owner(kind="Job", name="gone", uid="gone")
    index.record_bind(other, "0", "n5", (), NOW)
    index.vacate("n5", other.key, NOW)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="nf"), 0))
    terms = {t.role: t for t in d.terms}
    assert terms["displace"].weight > terms["keep-clear"].weight
    index.occupy("p0", None)  # n0 is free now: the pod fits, vacant homes are kept clear of
    d = admit(index, snap, replica(owner(kind="Deployment", uid="nf2"), 0))
    assert {t.role: t.values for t in d.terms}["keep-clear"] == ("n5",)


def test_nothing_free_drops_vacant_homes_also_with_displacement_switched_off():
    """Whether anything is free is a fact of the cluster, not of the displace-few switch:
    with the switch off the vacant-homes term must still not steer the eviction."""
    index, snap = full_cluster()
    other = owner(kind="Job", name="gone", uid="gone-off")
    index.record_bind(other, "0", "n5", (), NOW)
    index.vacate("n5", other.key, NOW)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="off2"), 0),
              settings=Settings(preferences=Preferences(displace_few=False)))
    assert "keep-clear" not in {t.role for t in d.terms}


def two_free_nodes() -> tuple[MemoryIndex, ClusterSnapshot]:
    """n0, n1 free; n2..n5 held by training jobs b and c (priority 100)."""
    index, snap = full_cluster()
    index.occupy("p0", None)
    index.occupy("p1", None)
    return index, snap


def test_a_burst_larger_than_the_free_room_displaces_with_its_later_replicas():
    """16 replicas are admitted before any binds: the cluster still shows room to all of
    them, yet those beyond the room will make the scheduler evict (the in-flight ones)."""
    index, snap = two_free_nodes()
    deploy = owner(kind="Deployment", name="infer", uid="burst")
    got = []
    for i in range(4):
        p = replica(deploy, i)
        d = admit(index, snap, p, now=NOW + i * 0.01)
        index.waiting.admitted(pod_load(p, d.owner_key, PREFIXES), NOW + i * 0.01)  # what the adapter does
        got.append(d)
    assert len({d.victim for d in got}) == 1 and got[0].victim is not None, "all four agree on one victim"
    assert [d.burst.sent for d in got] == [0, 0, 1, 2], "only the two beyond the room use up its nodes"


@pytest.mark.parametrize(
    "ahead, priority, displaced",
    [
        pytest.param([Load("ns/x", 1000, 8), Load("ns/y", 1000, 8)], 1000, True, id="two-pending-fill-two-free"),
        pytest.param([Load("ns/x", 1000, 8)], 1000, False, id="one-pending-leaves-one-free"),
        pytest.param([Load("ns/x", 100, 8), Load("ns/y", 100, 8)], 1000, False, id="lower-priority-pending-come-after"),
        pytest.param([Load("ns/x", 5000, 4)] * 3, 1000, True, id="three-half-pods-take-two-nodes"),
    ],
)
def test_pending_pods_ahead_take_the_free_room(ahead, priority, displaced):
    index, snap = two_free_nodes()
    for i, load in enumerate(ahead):
        index.waiting.wait(f"pending-{i}", load)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="late"), 0, priority))
    assert d.burst.sent == (1 if displaced else 0), "only a pod left without room uses up the victim's nodes"


def test_admissions_in_flight_expire_and_arrive():
    index, snap = two_free_nodes()
    for _ in range(2):
        index.waiting.admitted(Load("ns/x", 1000, 8), NOW)
    assert index.waiting.ahead(1000, 8, NOW) == 2
    index.waiting.arrived("ns/x")
    assert index.waiting.ahead(1000, 8, NOW) == 1
    assert index.waiting.ahead(1000, 8, NOW + 60) == 0, "an admission never seen stops counting"


def test_with_no_lower_priority_workload_vacant_homes_stay_kept_clear_of():
    """Nothing free but nobody to evict: the pod waits for room, and keeping clear of other
    owners' vacant homes is still right."""
    index, snap = full_cluster()
    other = owner(kind="Job", name="gone", uid="gone-low")
    index.record_bind(other, "0", "n5", (), NOW)
    index.vacate("n5", other.key, NOW)
    d = admit(index, snap, replica(owner(kind="Deployment", uid="same-prio"), 0, priority=100))
    assert {t.role: t.values for t in d.terms}.get("keep-clear") == ("n5",)


# -- the victims are computed once per occupancy and node change ---------------------------------

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("occupy"), st.integers(0, 9), st.one_of(st.none(), st.integers(0, 5)),
                  st.sampled_from(["ns/a", "ns/b", "ns/c"]), st.sampled_from([50, 100, 2000]), st.sampled_from([4, 8])),
        st.tuples(st.just("node"), st.integers(0, 5), st.booleans(), st.sampled_from([8, 16, None])),
        st.tuples(st.just("ask"), st.sampled_from([100, 1000]), st.sampled_from([4, 8])),
        st.tuples(st.just("new-snapshot")),
    ),
    max_size=40,
)


@hsettings(max_examples=200, deadline=None)
@given(ops=_OPS)
def test_the_kept_views_answer_as_a_pass_over_everything(ops):
    """Whatever pods come, go and move and nodes fall sick, recover or change size between
    them, the views kept node by node (victims, free room) answer what one pass over every
    pod and node gives."""
    index, snap = MemoryIndex(), cluster()
    snap.changes = deque(maxlen=3)  # a view further behind than the changes kept starts over
    for op in ops:
        if op[0] == "new-snapshot":  # the views were made from another snapshot
            snap = ClusterSnapshot(dict(snap.nodes))
        elif op[0] == "occupy":
            _, pod_i, node_i, key, priority, npus = op
            index.occupy(f"p{pod_i}", None if node_i is None else f"n{node_i}", Load(key, priority, npus))
        elif op[0] == "node":
            _, node_i, healthy, npus = op
            snap.put(NodeState(f"n{node_i}", Health.HEALTHY if healthy else Health.UNHEALTHY, npus=npus))
        else:
            me = Load("ns/infer", op[1], op[2])
            kept, fresh = eviction_victims(me, index, snap), every_victim(me, index, snap)
            assert {v: sorted(n) for v, n in kept.nodes.items()} == fresh.nodes and kept.priorities == fresh.priorities
            for enough in (1, 3, 100):  # either may overshoot `enough` by what its last node adds
                view = index.room.slots(snap, index.node_used, me.npus, enough)
                assert min(view, enough) == min(free_slots(snap, index.node_used, me.npus, enough), enough)
            skip = index.is_vacant_home
            assert index.room.nodes(snap, index.node_used, me.npus, skip, 2) == free_nodes(snap, index.node_used, me.npus, skip, 2)


# -- pulls first: a waiting gang's vacant home before a running gang's nodes ------------------------

def waiting_gang_with_free_homes() -> tuple[MemoryIndex, ClusterSnapshot, object]:
    """train-a (priority 100) was displaced and restarted: its ranks wait, its homes n0 and n1
    are vacant and free, so they are claimed; train-b and train-c still run on n2..n5."""
    index, snap = full_cluster()
    gang = owner(kind="Job", name="train-a", uid="train-a")
    for rank, node in (("0", "n0"), ("1", "n1")):
        index.record_bind(gang, rank, node, (), NOW - 100)
        index.occupy(f"p{node[1]}", None)
        index.vacate(node, gang.key, NOW - 50)
    for i in range(2):  # its new pods, pending
        index.waiting.wait(f"a-new-{i}", Load(gang.key, 100, 8))
    index.pods.pending[gang.key] = 2
    index.pods.active[gang.key] = 2
    return index, snap, gang


def test_an_evicting_burst_takes_a_lower_priority_waiting_gangs_homes_before_displacing_a_running_gang():
    """Issue 44's crowded day: the replicas of a burst kept off the homes of the gang they had
    just displaced (claimed: it waits) and pointed the scheduler at a second gang, restarting it
    whole and pulling its image on every rank. The waiting gang, of lower priority, cannot come
    back before the burst is placed; one of its homes taken costs it at most one move, a second
    gang displaced costs every rank of it."""
    index, snap, gang = waiting_gang_with_free_homes()
    deploy = owner(kind="Deployment", name="infer", uid="burst")
    decided = [admit(index, snap, replica(deploy, i), now=NOW + i) for i in range(4)]
    assert [d.victim for d in decided if d.victim], "the burst displaces"
    for i, d in enumerate(x for x in decided if x.victim):
        for home in ("n0", "n1"):
            assert all(preferred_score(d, home) > preferred_score(d, n) for n in ("n2", "n3", "n4", "n5")), (i, d.terms)


def test_a_waiting_gang_of_the_same_or_higher_priority_keeps_its_claim():
    index, snap, gang = waiting_gang_with_free_homes()
    index.waiting.wait("a-new-0", Load(gang.key, 1000, 8))
    index.waiting.wait("a-new-1", Load(gang.key, 1000, 8))
    d = admit(index, snap, replica(owner(kind="Deployment", name="infer", uid="burst2"), 0))
    assert d.victim is not None
    assert all(preferred_score(d, "n0") < preferred_score(d, n) for n in ("n2", "n3", "n4", "n5"))
