"""behaviour.md "Memory": the memory rules and the MemoryIndex (binds, warm, faults, pool, promises,
live pods, TTL and size bound, the rank counter)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.engine.memory import LivePod, MemoryIndex, OwnerMemory, RankEntry, changes as rules, forgetting

from .helpers import NOW, assert_derived_consistent, memory, owner

TOPO_A = (("rack", "1"), ("superPod", "5"))
TOPO_B = (("rack", "2"), ("superPod", "5"))
HOUR = 3600.0


# -- record_bind ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "before, bind, changed, after",
    [
        pytest.param(None, ("n1", TOPO_A), True, dict(node="n1", previous_node=None, warm=False, topology=TOPO_A,
                                                        bound_at=NOW), id="first-bind"),
        pytest.param(("n1", TOPO_A, True), ("n2", TOPO_B), True,
                     dict(node="n2", previous_node="n1", warm=False, topology=TOPO_B, bound_at=NOW), id="move"),
        pytest.param(("n1", TOPO_A, True), ("n1", TOPO_A), False,
                     dict(node="n1", previous_node=None, warm=True, topology=TOPO_A, bound_at=NOW - 10),
                     id="same-binding-no-change"),
        pytest.param(("n1", TOPO_A, True), ("n1", TOPO_B), True,
                     dict(node="n1", previous_node=None, warm=True, topology=TOPO_B), id="same-node-new-topology"),
        pytest.param(("n1", (), False), ("n2", ()), True, dict(node="n2", previous_node="n1", warm=False),
                     id="move-cold"),
    ],
)
def test_record_bind(before, bind, changed, after):
    ranks = {"1": RankEntry(node="n1", bound_at=NOW - 10)}  # a sibling sharing n1
    if before is not None:
        node, topo, warm = before
        ranks["3"] = RankEntry(node=node, bound_at=NOW - 10, topology=topo, warm=warm)
    mem = OwnerMemory(owner=owner(), last_seen=NOW - 100, ranks=ranks)
    assert rules.record_bind(mem, "3", bind[0], bind[1], NOW) is changed
    entry = mem.ranks["3"]
    for attr, value in after.items():
        assert getattr(entry, attr) == value, attr
    assert mem.last_seen == NOW
    assert_derived_consistent(mem)


def test_move_back_records_the_node_left():
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    for t, node in enumerate(["n1", "n2", "n1"]):
        rules.record_bind(mem, "0", node, (), NOW + t)
    assert (mem.ranks["0"].node, mem.ranks["0"].previous_node) == ("n1", "n2")


def test_rankless_bind_goes_to_the_pool():
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    assert rules.record_bind(mem, None, "n1", (), NOW) is True
    assert mem.ranks == {} and set(mem.pool) == {"n1"}
    assert (mem.pool["n1"].last_used, mem.pool["n1"].warm) == (NOW, False)
    rules.record_bind(mem, None, "n1", (), NOW + 50)
    assert mem.pool["n1"].last_used == NOW + 50
    rules.record_bind(mem, None, "n2", (), NOW + 60)
    assert set(mem.pool) == {"n1", "n2"}


# -- mark_warm ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "rank, node, changed, warm_after",
    [
        pytest.param("0", "n-now", True, True, id="current-node"),
        pytest.param("0", "n-before", False, False, id="previous-node"),
        pytest.param("0", "n-other", False, False, id="other-node"),
        pytest.param("9", "n-now", False, None, id="unknown-rank"),
    ],
)
def test_mark_warm_only_for_current_node(rank, node, changed, warm_after):
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    rules.record_bind(mem, "0", "n-before", (), NOW)
    rules.record_bind(mem, "0", "n-now", (), NOW)
    assert rules.mark_warm(mem, rank, node, NOW) is changed
    assert "9" not in mem.ranks
    if warm_after is not None:
        assert mem.ranks[rank].warm is warm_after


def test_mark_warm_twice_is_one_change():
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    rules.record_bind(mem, "0", "n1", (), NOW)
    assert rules.mark_warm(mem, "0", "n1", NOW) is True
    assert rules.mark_warm(mem, "0", "n1", NOW) is False
    assert mem.ranks["0"].warm is True


def test_move_resets_warm():
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    rules.record_bind(mem, "0", "n1", (), NOW)
    rules.mark_warm(mem, "0", "n1", NOW)
    rules.record_bind(mem, "0", "n2", (), NOW + 1)
    assert mem.ranks["0"].warm is False


def test_rankless_warm_marks_pool_entry():
    mem = OwnerMemory(owner=owner(), last_seen=NOW)
    assert rules.mark_warm(mem, None, "n1", NOW) is True
    assert mem.pool["n1"].warm is True
    assert rules.mark_warm(mem, None, "n1", NOW) is False
    rules.record_bind(mem, None, "n1", (), NOW + 5)
    assert mem.pool["n1"].warm is True, "a re-bind on a warm pool node keeps it warm"


# -- faults ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "marks, now, expected",
    [
        pytest.param([("f1", NOW)], NOW, ["f1"], id="fresh"),
        pytest.param([("f1", NOW)], NOW + HOUR - 1, ["f1"], id="just-before-expiry"),
        pytest.param([("f1", NOW)], NOW + HOUR, [], id="at-expiry"),
        pytest.param([("f1", NOW), ("f2", NOW - HOUR)], NOW, ["f1"], id="one-expired"),
        pytest.param([("f2", NOW), ("f1", NOW)], NOW, ["f1", "f2"], id="sorted"),
        pytest.param([], NOW, [], id="none"),
    ],
)
def test_active_faults(marks, now, expected):
    mem = memory(ranks={"0": "home"}, faults={"0": marks})
    assert rules.active_faults(mem.ranks["0"], now, HOUR) == expected


def test_active_faults_of_no_entry():
    assert rules.active_faults(None, NOW, HOUR) == []


def test_record_fault_refreshes_and_prunes():
    mem = memory(ranks={"0": "home"})
    assert rules.record_fault(mem, "0", "f1", NOW, HOUR) is True
    assert rules.record_fault(mem, "0", "f2", NOW + 10, HOUR) is True
    assert rules.record_fault(mem, "0", "f1", NOW + HOUR - 5, HOUR) is True  # refresh f1
    marks = {(m.node, m.at) for m in mem.ranks["0"].faults}
    assert marks == {("f1", NOW + HOUR - 5), ("f2", NOW + 10)}
    assert rules.active_faults(mem.ranks["0"], NOW + HOUR + 20, HOUR) == ["f1"]
    rules.record_fault(mem, "0", "f3", NOW + HOUR + 20, HOUR)  # f2 is past its hour: pruned
    assert {m.node for m in mem.ranks["0"].faults} == {"f1", "f3"}


def test_record_fault_unknown_rank_or_owner():
    mem = memory(ranks={"0": "home"})
    assert rules.record_fault(mem, "7", "f1", NOW, HOUR) is False
    assert "7" not in mem.ranks
    assert MemoryIndex().record_fault("no-such-owner", "0", "f1", NOW, HOUR) is False


def test_drop_expired_faults():
    index = MemoryIndex()
    ref = owner()
    index.record_bind(ref, "0", "home", (), NOW)
    index.record_fault(ref.key, "0", "f1", NOW, HOUR)
    index.dirty.clear()
    index.drop_expired_faults(NOW + 10, HOUR)
    assert index.dirty == set() and index.owner(ref.key).ranks["0"].faults
    index.drop_expired_faults(NOW + HOUR, HOUR)
    assert index.owner(ref.key).ranks["0"].faults is None
    assert index.dirty == {ref.key}


# -- the index: dirty, promises, live pods ----------------------------------------------------

def test_dirty_only_on_change():
    index = MemoryIndex()
    ref = owner()
    assert index.record_bind(ref, "0", "n1", TOPO_A, NOW) is True
    assert index.dirty == {ref.key}
    index.dirty.clear()
    assert index.record_bind(ref, "0", "n1", TOPO_A, NOW + 1) is False
    assert index.dirty == set()
    assert index.owner(ref.key).last_seen == NOW + 1


def test_unclaimed_promises_expire_claimed_ones_last():
    index = MemoryIndex()
    ref, other = owner(kind="Deployment"), owner(kind="Deployment")
    index.promised.make(ref.key, "n1", NOW, 120)
    index.promised.make(ref.key, "n2", NOW, 60)
    index.promised.make(other.key, "n1", NOW, 120)
    assert index.promised.nodes(ref.key, NOW) == {"n1", "n2"}
    assert index.promised.nodes(ref.key, NOW + 60) == {"n1"}
    index.promised.claim(ref.key, "n1", "pending-pod", NOW + 1)
    assert index.promised.nodes(ref.key, NOW + 10_000) == {"n1"}, "a pending pod keeps its promise"
    index.promised.release(ref.key, "n1", "another-pod")
    assert index.promised.nodes(ref.key, NOW + 10_000) == {"n1"}, "only its holder ends a held promise"
    index.promised.release(ref.key, "n1", "pending-pod")
    assert index.promised.nodes(other.key, NOW + 1) == {"n1"}, "another owner's promise stays"
    index.promised.drop_expired(NOW + 120)
    assert ref.key not in index.promises and other.key not in index.promises
    index.promised.make(other.key, "n1", NOW, 120)
    index.forget(other.key)
    assert index.promised.nodes(other.key, NOW) == set()


def test_a_promise_held_by_another_pod_is_not_taken_over():
    index = MemoryIndex()
    ref = owner(kind="Deployment")
    index.promised.claim(ref.key, "n1", "first", NOW)
    index.promised.claim(ref.key, "n1", "second", NOW)
    assert index.promises[ref.key]["n1"].pod == "first"


def test_occupied_nodes_excludes_terminating_and_pending():
    index = MemoryIndex()
    ref, other = owner(), owner()
    index.pod_seen("p1", LivePod(ref.key, "0", "n1"))
    index.pod_seen("p2", LivePod(ref.key, "1", "n2", terminating=True))
    index.pod_seen("p3", LivePod(ref.key, "2", None))
    index.pod_seen("p4", LivePod(other.key, "0", "n4"))
    assert index.occupied_nodes(ref.key) == {"n1"}
    assert index.has_live_pods(ref.key)
    index.pod_gone("p1")
    assert index.occupied_nodes(ref.key) == set()
    index.pod_gone("p2")
    index.pod_gone("p3")
    assert not index.has_live_pods(ref.key)
    assert index.pod_gone("p3") is None
    assert index.occupied_nodes(other.key) == {"n4"}


# -- forgetting ---------------------------------------------------------------------------------

TTL = 72 * HOUR


@pytest.mark.parametrize(
    "age, live, expired",
    [
        pytest.param(TTL - 1, False, False, id="younger-than-ttl"),
        pytest.param(TTL, False, True, id="at-ttl"),
        pytest.param(TTL * 3, False, True, id="long-gone"),
        pytest.param(TTL * 3, True, False, id="old-but-live-pod"),
    ],
)
def test_expired(age, live, expired):
    index = MemoryIndex()
    ref = owner()
    index.record_bind(ref, "0", "n1", (), NOW - age)
    if live:
        index.pod_seen("p", LivePod(ref.key, "0", None, terminating=True))
    assert forgetting.expired(index, NOW, TTL) == ([ref.key] if expired else [])


def test_touch_keeps_an_owner_alive():
    index = MemoryIndex()
    ref = owner()
    index.record_bind(ref, "0", "n1", (), NOW - TTL)
    index.touch(ref.key, NOW - 1, HOUR)
    assert forgetting.expired(index, NOW, TTL) == []


@pytest.mark.parametrize(
    "owners, bound, victims",
    [
        # owners: (name, last_seen, ranks[, namespace]); each costs its ranks + 1
        pytest.param([("a", 1, 3), ("b", 2, 3)], 8, [], id="at-bound"),
        pytest.param([("a", 1, 3), ("b", 2, 3)], 10, [], id="under-bound"),
        pytest.param([("a", 1, 3), ("b", 2, 3)], 7, ["a"], id="one-over"),
        pytest.param([("b", 2, 3), ("a", 1, 3)], 7, ["a"], id="order-of-insertion-irrelevant"),
        pytest.param([("a", 1, 1), ("b", 2, 1), ("c", 3, 5)], 4, ["a", "b", "c"], id="until-under"),
        pytest.param([("a", 5, 1), ("b", 1, 4), ("c", 3, 2)], 8, ["b"], id="least-recent-first"),
        pytest.param([("a", 1, 2), ("b", 1, 2), ("c", 9, 2)], 3, ["a", "b"], id="tie-by-uid"),
        pytest.param([("a", 1, 3)], 0, ["a"], id="zero-bound"),
        pytest.param([("a", 1, 0), ("b", 2, 0), ("c", 3, 0)], 2, ["a"], id="owners-with-no-ranks-count"),
        # a noisy namespace fills the memory with fresh owners: it forgets its own, not the quiet one's older ones
        pytest.param([("q", 1, 3, "quiet"), ("x", 8, 3, "noisy"), ("y", 9, 3, "noisy")], 8, ["x"], id="fair-between-namespaces"),
        pytest.param([("q", 1, 5, "quiet"), ("x", 8, 3, "noisy"), ("y", 9, 3, "noisy")], 8, ["x", "q"],
                     id="then-the-largest-whichever-it-is"),
    ],
)
def test_over_bound(owners, bound, victims):
    index = MemoryIndex()
    for name, seen, n, *namespace in owners:
        ref = owner(uid=f"ob-{name}", namespace=namespace[0] if namespace else "ns")
        index.ensure(ref, float(seen))
        for r in range(n):
            index.record_bind(ref, str(r), f"{name}-n{r}", (), float(seen))
    keys = {f"ob-{name}": f"{o[3] if len(o) > 3 else 'ns'}/ob-{name}" for o in owners for name in [o[0]]}
    assert forgetting.over_bound(index, bound) == [keys[f"ob-{v}"] for v in victims]


def test_pool_entries_count_against_the_bound():
    """A pool-only owner escaped a bound that counted ranks alone."""
    index = MemoryIndex()
    pool = owner(kind="Deployment", uid="ob-pool")
    for i in range(5):
        index.record_bind(pool, None, f"p{i}", (), NOW)
    assert forgetting.over_bound(index, 5) == [pool.key]
    assert forgetting.over_bound(index, 6) == []


@hsettings(max_examples=100, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 6), st.integers(0, 3), st.sampled_from(["a", "b", "c"])),
                   min_size=1, max_size=10),
    bound=st.integers(0, 40),
)
def test_over_bound_property(sizes, bound):
    """Forgetting the victims brings the index under the bound and the last victim was needed;
    each victim is the least recently seen owner of a namespace that held the most entries
    when it went."""
    index = MemoryIndex()
    for i, (seen, ranks, pooled, namespace) in enumerate(sizes):
        ref = owner(uid=f"prop-{i}", namespace=namespace)
        index.ensure(ref, float(seen))
        for r in range(ranks):
            index.record_bind(ref, str(r), f"n{r}", (), float(seen))
        pool = owner(kind="Deployment", uid=f"prop-pool-{i}", namespace=namespace)
        for k in range(pooled):
            index.record_bind(pool, None, f"p{k}", (), float(seen))
    victims = forgetting.over_bound(index, bound)
    left = {key: forgetting.entries(mem) for key, mem in index.owners.items()}
    assert sum(left.values()) - sum(left[v] for v in victims) <= bound
    if victims:
        assert sum(left.values()) - sum(left[v] for v in victims[:-1]) > bound, "the last victim was needed"
    remaining = dict(left)
    for victim in victims:
        totals: dict[str, int] = {}
        for key, size in remaining.items():
            totals[key.split("/")[0]] = totals.get(key.split("/")[0], 0) + size
        namespace = victim.split("/")[0]
        assert totals[namespace] == max(totals.values()), "taken from the largest namespace"
        oldest = min((index.owner(k).last_seen, k) for k in remaining if k.split("/")[0] == namespace)
        assert oldest[1] == victim, "its least recently seen owner"
        del remaining[victim]


# -- per-owner bound ----------------------------------------------------------------------------

def test_per_owner_bound_drops_the_rank_bound_longest_ago():
    index = MemoryIndex(max_ranks_per_owner=3)
    ref = owner()
    for t, r in enumerate(["2", "0", "1"]):
        index.record_bind(ref, r, f"n{r}", (), NOW + t)
    index.record_bind(ref, "2", "n9", (), NOW + 5)  # a move: no growth, nothing dropped
    assert set(index.owner(ref.key).ranks) == {"0", "1", "2"}
    index.record_bind(ref, "3", "n3", (), NOW + 6)
    mem = index.owner(ref.key)
    assert set(mem.ranks) == {"1", "2", "3"}, "rank 0 was bound longest ago"
    assert index.rank_count == 3
    assert_derived_consistent(mem)


def test_per_owner_bound_ties_by_key():
    index = MemoryIndex(max_ranks_per_owner=2)
    ref = owner()
    for r in ["b/1", "a/1", "c/2"]:
        index.record_bind(ref, r, "n", (), NOW)
    assert set(index.owner(ref.key).ranks) == {"b/1", "c/2"}
    assert_derived_consistent(index.owner(ref.key))


def test_per_owner_bound_on_the_pool():
    index = MemoryIndex(max_ranks_per_owner=2)
    ref = owner(kind="Deployment")
    for t, node in enumerate(["p0", "p1", "p2"]):
        index.record_bind(ref, None, node, (), NOW + t)
    assert set(index.owner(ref.key).pool) == {"p1", "p2"}
    assert index.rank_count == 0


# -- a node that stops being a home stops being a vacant home -------------------------------------

def vacant_for(index: MemoryIndex, key: str) -> set[str]:
    return {n for n in index.vacated_order if key in set(index.vacancies.owners_at(n))}


@pytest.mark.parametrize("how", ["moved", "dropped-at-the-bound", "pool-entry-dropped"])
def test_a_home_given_up_leaves_the_vacant_homes(how):
    """A rank that binds elsewhere, or one forgotten at the per-owner bound, no longer has a home
    on its old node: its vacancy there goes too. Every walk of the vacant homes stepped over
    such a node (a restarted gang bound elsewhere left one per rank, the most recent of all)."""
    index = MemoryIndex(max_ranks_per_owner=2)
    ref = owner(kind="Deployment") if how == "pool-entry-dropped" else owner()
    rank = None if how == "pool-entry-dropped" else "0"
    index.record_bind(ref, rank, "old", (), NOW)
    index.record_bind(ref, None if rank is None else "1", "kept", (), NOW + 1)
    for node in ("old", "kept"):
        index.vacate(node, ref.key, NOW + 2)  # their pods went
    assert vacant_for(index, ref.key) == {"old", "kept"}
    if how == "moved":
        index.record_bind(ref, "0", "new", (), NOW + 3)
    else:  # a third home past the bound of two: the oldest goes
        index.record_bind(ref, None if rank is None else "2", "new", (), NOW + 3)
    assert vacant_for(index, ref.key) == {"kept"}
    assert list(index.vacant_homes()) == ["kept"]


def test_a_node_still_home_to_another_rank_stays_vacant():
    index = MemoryIndex()
    ref = owner()
    index.record_bind(ref, "0", "shared", (), NOW)
    index.record_bind(ref, "1", "shared", (), NOW)
    index.vacate("shared", ref.key, NOW + 1)
    index.record_bind(ref, "0", "new", (), NOW + 2)  # rank 1's home is still there
    assert vacant_for(index, ref.key) == {"shared"}


# -- rank_count and the derived sibling indexes, through any sequence of operations ---------------

OWNERS = [owner(uid=f"rc-{i}") for i in range(3)]
KEYS = ["0", "1", "2", "3", "a/1", "b/1", "x"]

op = st.one_of(
    st.tuples(st.just("bind"), st.integers(0, 2), st.one_of(st.none(), st.sampled_from(KEYS)), st.sampled_from("abc")),
    st.tuples(st.just("warm"), st.integers(0, 2), st.one_of(st.none(), st.sampled_from(KEYS)), st.sampled_from("abc")),
    st.tuples(st.just("fault"), st.integers(0, 2), st.sampled_from(KEYS), st.sampled_from("abc")),
    st.tuples(st.just("forget"), st.integers(0, 2), st.none(), st.none()),
    st.tuples(st.just("adopt"), st.integers(0, 2), st.integers(0, 5), st.none()),
    st.tuples(st.just("adopt-same"), st.integers(0, 2), st.none(), st.none()),
    st.tuples(st.just("sweep"), st.integers(0, 2), st.none(), st.none()),
)


@hsettings(max_examples=200, deadline=None)
@given(ops=st.lists(op, max_size=40), per_owner=st.sampled_from([3, 8192]))
def test_rank_count_and_derived_indexes_stay_in_sync(ops, per_owner):
    index = MemoryIndex(max_ranks_per_owner=per_owner)
    for t, (kind, i, r, node) in enumerate(ops):
        ref, now = OWNERS[i], NOW + t
        if kind == "bind":
            index.record_bind(ref, r, node, (), now)
        elif kind == "warm":
            index.mark_warm(ref, r, node, now)
        elif kind == "fault":
            index.record_fault(ref.key, r, node, now, HOUR)
        elif kind == "forget":
            index.forget(ref.key)
        elif kind == "adopt":
            index.adopt(memory(ref, ranks={KEYS[k]: f"m{k % 2}" for k in range(r)}, last_seen=now))
        elif kind == "adopt-same" and index.owner(ref.key) is not None:
            index.adopt(index.owner(ref.key))
        elif kind == "sweep":
            for uid in forgetting.over_bound(index, 4):
                index.forget(uid)
        assert index.rank_count == sum(len(m.ranks) for m in index.owners.values()), (t, kind)
        for mem in index.owners.values():
            assert_derived_consistent(mem)
