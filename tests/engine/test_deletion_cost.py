"""The scale-in marks (engine/replicas/deletion_cost.py): set on a replica bound to another
workload's claimed home, removed when the home is no longer claimed, never a user's cost;
ordered so that the homes of the owner its scheduler places first are freed first."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from homing.engine.replicas.deletion_cost import (
    MARK,
    MARK_BAND,
    MARK_FLOOR,
    Queued,
    Replica,
    is_mark,
    mark_values,
    marks,
    queue_order,
    queued,
)

INFER, TRAIN, LATER = "ns/infer", "ns/train", "ns/later"
TOP = str(MARK_FLOOR + MARK_BAND - 1)
ONLY = str(MARK_FLOOR + MARK_BAND // 2 - 1)  # the only owner waiting: the middle of the band


def replica(node: str, cost: str | None = None, owner: str = INFER) -> Replica:
    return Replica("ns", f"infer-{node}", owner, node, cost)


@pytest.mark.parametrize(
    "r, claimants, wanted",
    [
        pytest.param(replica("a"), {"a": {TRAIN}}, ONLY, id="on-a-claimed-home-marked"),
        pytest.param(replica("a", TOP), {"a": {TRAIN}}, "keep", id="already-marked"),
        pytest.param(replica("a", MARK), {"a": {TRAIN}}, "keep", id="a-mark-of-the-band-kept-while-in-order"),
        pytest.param(replica("a", MARK), {}, None, id="no-longer-claimed-unmarked"),
        pytest.param(replica("a", TOP), {}, None, id="any-mark-of-the-band-unmarked"),
        pytest.param(replica("a", MARK), {"a": {INFER}}, None, id="claimed-by-its-own-pool-only-unmarked"),
        pytest.param(replica("a"), {"a": {INFER}}, "keep", id="its-own-pools-claim-is-no-reason"),
        pytest.param(replica("b"), {"a": {TRAIN}}, "keep", id="on-a-free-node"),
        pytest.param(replica("a", "5"), {"a": {TRAIN}}, "keep", id="a-users-cost-kept"),
        pytest.param(replica("a", "5"), {}, "keep", id="a-users-cost-never-removed"),
        pytest.param(replica("a", "-2147483001"), {}, "keep", id="a-value-below-the-band-is-the-users"),
        pytest.param(replica("a", str(MARK_FLOOR + MARK_BAND)), {"a": {TRAIN}}, "keep", id="a-value-above-the-band-is-the-users"),
        pytest.param(replica("a", "cheap"), {"a": {TRAIN}}, "keep", id="an-unreadable-cost-is-the-users"),
    ],
)
def test_marks(r: Replica, claimants: dict, wanted):
    got = marks([("uid", r)], claimants, [TRAIN])
    if wanted == "keep":
        assert got == []
    else:
        (m,) = got
        assert (m.uid, m.namespace, m.name, m.value, m.node) == ("uid", "ns", r.name, wanted, r.node)
        assert m.claimant == (TRAIN if wanted else None)


def test_the_marks_parse_as_int32_near_its_floor():
    """The controller parses the cost as an int32: every mark must fit and sit below any
    cost a user would set."""
    assert -(2**31) < MARK_FLOOR and MARK_FLOOR + MARK_BAND < -(2**31) + 2000
    assert is_mark(MARK) and is_mark(TOP) and not is_mark("0") and not is_mark(None)


def values_by_node(got) -> dict[str, int]:
    return {m.node: int(m.value) for m in got}


def test_the_first_owner_in_the_queue_gets_its_homes_freed_first():
    reps = [(n, replica(n)) for n in ("a1", "a2", "b1", "b2")]
    claimants = {"a1": {LATER}, "a2": {LATER}, "b1": {TRAIN}, "b2": {TRAIN}}
    got = values_by_node(marks(reps, claimants, [TRAIN, LATER]))
    assert max(got["b1"], got["b2"]) < min(got["a1"], got["a2"])


def test_a_home_two_owners_wait_for_takes_the_earlier_owners_mark():
    got = values_by_node(marks([("u", replica("a"))], {"a": {LATER, TRAIN}}, [TRAIN, LATER]))
    assert got["a"] == int(mark_values({TRAIN, LATER}, [TRAIN, LATER])[TRAIN])


def test_owners_with_nothing_pending_come_after_the_queued_ones():
    values = mark_values({"ns/idle", TRAIN}, [TRAIN])
    assert int(values[TRAIN]) < int(values["ns/idle"])


def test_when_the_first_owner_is_placed_nobody_elses_mark_moves():
    """The common change at night: the head of the queue binds; re-patching every other
    replica then would spend the patch budget while the scale-in runs."""
    before = mark_values({TRAIN, LATER, "ns/last"}, [TRAIN, LATER, "ns/last"])
    after = mark_values({LATER, "ns/last"}, [LATER, "ns/last"], {k: int(v) for k, v in before.items()})
    assert after == {k: before[k] for k in after}


def test_an_owner_joining_the_queue_moves_no_other_mark():
    """Gangs are displaced one by one all morning: each newcomer takes a value between its
    neighbours', so the replicas already marked keep theirs."""
    before = mark_values({TRAIN, "ns/last"}, [TRAIN, "ns/last"])
    carried = {k: int(v) for k, v in before.items()}
    for order in ([LATER, TRAIN, "ns/last"], [TRAIN, LATER, "ns/last"], [TRAIN, "ns/last", LATER]):
        after = mark_values({TRAIN, LATER, "ns/last"}, order, carried)
        assert {k: after[k] for k in before} == before
        assert [int(after[o]) for o in order] == sorted(int(after[o]) for o in order)


def test_marks_out_of_order_are_redone_fewest_first():
    """Two owners whose places swapped: one of them keeps its mark, the other moves."""
    after = mark_values({TRAIN, LATER}, [TRAIN, LATER], {TRAIN: MARK_FLOOR + 600, LATER: MARK_FLOOR + 300})
    assert int(after[TRAIN]) < int(after[LATER])
    assert after[TRAIN] == str(MARK_FLOOR + 600) or after[LATER] == str(MARK_FLOOR + 300)


def test_replicas_keep_their_marks_as_the_queue_grows():
    """The adapter's view: marks written, then a newcomer queued ahead; only the
    newcomer's replica is patched."""
    reps = [("u1", replica("b1")), ("u2", replica("a1"))]
    claimants = {"b1": {TRAIN}, "a1": {LATER}}
    first = {m.uid: m.value for m in marks(reps, claimants, [TRAIN, LATER])}
    reps = [("u1", replica("b1", first["u1"])), ("u2", replica("a1", first["u2"])), ("u3", replica("c1"))]
    claimants["c1"] = {"ns/early"}
    again = marks(reps, claimants, ["ns/early", TRAIN, LATER])
    assert [m.uid for m in again] == ["u3"] and int(again[0].value) < int(first["u1"])


def test_more_owners_than_the_band_keep_their_order_and_the_last_share_the_top():
    owners = [f"ns/o{i:04d}" for i in range(MARK_BAND + 5)]
    values = mark_values(set(owners), owners)
    assert all(is_mark(v) for v in values.values())
    assert [int(values[o]) for o in owners] == sorted(int(values[o]) for o in owners)
    assert values[owners[0]] == MARK
    assert values[owners[-1]] == values[owners[-5]] == TOP


@given(st.lists(st.sampled_from([f"ns/o{i}" for i in range(10)]), unique=True, min_size=1),
       st.dictionaries(st.sampled_from([f"ns/o{i}" for i in range(10)]),
                       st.integers(MARK_FLOOR - 5, MARK_FLOOR + MARK_BAND + 5)))
def test_carried_marks_never_break_the_order(order: list[str], carried: dict[str, int]):
    values = mark_values(set(order), order, carried)
    got = [int(values[o]) for o in order]
    assert got == sorted(got) and len(set(got)) == len(got) and all(is_mark(values[o]) for o in order)


def group(created: str) -> dict:
    return {"metadata": {"creationTimestamp": created}}


EARLY, LATE = "1970-01-01T00:00:10Z", "1970-01-01T00:00:20Z"


@pytest.mark.parametrize(
    "pods, podgroups, order",
    [
        pytest.param([Queued("a", 0, 5.0), Queued("b", 0, 1.0)], {}, ["b", "a"], id="earlier-first"),
        pytest.param([Queued("a", 100, 5.0), Queued("b", 0, 1.0)], {}, ["a", "b"], id="higher-priority-first"),
        pytest.param([Queued("b", 0, 1.0), Queued("a", 0, 1.0)], {}, ["a", "b"], id="ties-by-owner"),
        pytest.param([Queued("a", 0, 1.0, ("ns", "a-9-x")), Queued("b", 0, 1.0, ("ns", "a-10-y"))],
                     {("ns", "a-9-x"): group(EARLY), ("ns", "a-10-y"): group(EARLY)}, ["b", "a"], id="ties-by-pod-group"),
        pytest.param([Queued("a", 0, 9.0), Queued("a", 0, 2.0), Queued("b", 0, 3.0)], {}, ["a", "b"], id="an-owner-by-its-first-pod"),
        pytest.param([Queued("a", 0, 1.0, ("ns", "pa")), Queued("b", 0, 2.0, ("ns", "pb"))],
                     {("ns", "pa"): group(LATE), ("ns", "pb"): group(EARLY)}, ["b", "a"], id="by-the-groups-creation-not-the-pods"),
        pytest.param([Queued("a", 0, 100.0, ("ns", "gone")), Queued("b", 0, 15.0, ("ns", "pb"))],
                     {("ns", "pb"): group(EARLY)}, ["b", "a"], id="a-group-not-seen-falls-back-to-the-pod"),
        pytest.param([Queued("a", 0, 1.0, ("ns", "pa")), Queued("b", 0, 2.0, ("ns", "pb"))],
                     {("ns", "pa"): group("yesterday"), ("ns", "pb"): group(EARLY)}, ["a", "b"],
                     id="an-unreadable-group-time-falls-back-to-the-pod"),
    ],
)
def test_queue_order(pods, podgroups, order):
    assert queue_order(pods, podgroups) == order


def pod(created: str | None, group: str | None = None) -> dict:
    meta: dict = {"namespace": "ns", "name": "p"}
    if created is not None:
        meta["creationTimestamp"] = created
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"metadata": meta}


@pytest.mark.parametrize(
    "p, expected",
    [
        pytest.param(pod("1970-01-01T00:01:40Z"), Queued("ns/o", 7, 100.0), id="its-own-creation"),
        pytest.param(pod("1970-01-01T00:01:40Z", "pg"), Queued("ns/o", 7, 100.0, ("ns", "pg")), id="and-its-group"),
        pytest.param(pod("yesterday"), Queued("ns/o", 7, float("inf")), id="an-unreadable-time-comes-last"),
        pytest.param(pod(None), Queued("ns/o", 7, float("inf")), id="no-time-comes-last"),
    ],
)
def test_queued(p: dict, expected: Queued):
    assert queued(p, "ns/o", 7) == expected


@given(st.lists(st.sampled_from([f"ns/o{i}" for i in range(8)]), unique=True, min_size=1),
       st.lists(st.sampled_from([f"ns/o{i}" for i in range(8)]), unique=True))
def test_marks_follow_the_queue_and_stay_in_the_band(claimants: list[str], order: list[str]):
    values = mark_values(set(claimants), order)
    assert set(values) == set(claimants) and all(is_mark(v) for v in values.values())
    ranked = [o for o in order if o in values] + sorted(set(claimants) - set(order))
    assert [int(values[o]) for o in ranked] == sorted(int(values[o]) for o in ranked)
    assert len({values[o] for o in ranked}) == len(ranked)  # distinct while the band lasts
