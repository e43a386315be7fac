"""The re-list's bookkeeping (watchledger.py, behaviour.md "Operation"): a listing hands over only
what kopf's watch missed, what it lacks goes as deleted, what the watch deleted meanwhile never
comes back, and a change the watch never sent marks it behind until it sends again."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from homing.kube.watch.watchledger import Ledger, newer


def obj(uid: str, version: int | str) -> dict:
    return {"metadata": {"uid": uid, "name": f"n-{uid}", "namespace": "ns", "resourceVersion": str(version)}}


@pytest.mark.parametrize(
    ("version", "than", "expected"),
    [("12", "9", True), ("9", "12", False), ("12", "12", False), ("12", None, True), ("b", "a", True), ("a", "a", False)],
)
def test_newer_orders_etcd_revisions_and_otherwise_tells_only_different(version, than, expected):
    assert newer(version, than) is expected


def test_a_repeat_of_what_the_engine_has_is_not_handed_over():
    ledger = Ledger()
    assert ledger.from_watch("ADDED", obj("a", 5))
    assert not ledger.from_watch(None, obj("a", 5))  # kopf's own listing after the start-up one
    assert not ledger.from_watch("MODIFIED", obj("a", 4))  # older than what was handed over
    assert ledger.from_watch("MODIFIED", obj("a", 6))


def test_the_listing_hands_over_what_the_watch_missed_and_marks_it_behind():
    ledger = Ledger()
    ledger.from_watch("ADDED", obj("a", 5))
    ledger.begin_listing()
    assert ledger.from_listing(obj("a", 7))  # changed at 7; the watch never said
    assert ledger.end_listing({"a"}, now=100.0) == []
    assert ledger.missed == 1 and ledger.behind_for(130.0) == 30.0
    ledger.from_watch("MODIFIED", obj("a", 8))
    assert ledger.behind_for(200.0) == 0.0  # it sends again: alive


def test_a_watch_event_after_the_miss_was_found_means_the_watch_is_alive():
    ledger = Ledger()
    ledger.from_watch("ADDED", obj("a", 5))
    ledger.begin_listing()
    assert ledger.from_listing(obj("a", 7))
    assert not ledger.from_watch("MODIFIED", obj("a", 7))  # it was in flight
    ledger.end_listing({"a"}, now=100.0)
    assert ledger.behind_since is None


def test_what_the_listing_lacks_goes_as_deleted_unless_the_watch_spoke_of_it_meanwhile():
    ledger = Ledger()
    for uid in "abc":
        ledger.from_watch("ADDED", obj(uid, 5))
    ledger.begin_listing()
    ledger.from_watch("ADDED", obj("d", 20))  # created after the listing's snapshot
    ledger.from_watch("MODIFIED", obj("c", 21))  # changed after it
    ledger.from_listing(obj("a", 5))
    gone = ledger.end_listing({"a"}, now=0.0)
    assert [g["metadata"]["uid"] for g in gone] == ["b"]
    assert set(ledger.applied) == {"a", "c", "d"} and ledger.phantoms == 1
    assert ledger.behind_since is None  # a deletion found is normal after kopf's own re-list


def test_what_the_watch_deleted_during_the_listing_is_not_brought_back():
    ledger = Ledger()
    ledger.from_watch("ADDED", obj("a", 5))
    ledger.begin_listing()
    ledger.from_watch("DELETED", obj("a", 9))
    assert not ledger.from_listing(obj("a", 5))  # the snapshot is older than the deletion
    assert not ledger.from_listing(obj("a", 6))
    assert ledger.end_listing({"a"}, now=0.0) == [] and "a" not in ledger.applied


def test_the_start_up_listing_judges_nothing():
    ledger = Ledger()
    ledger.begin_listing(counting=False)
    assert ledger.from_listing(obj("a", 5))
    ledger.end_listing({"a"}, now=0.0)
    assert ledger.missed == 0 and ledger.behind_since is None


def test_an_abandoned_listing_concludes_nothing():
    ledger = Ledger()
    ledger.from_watch("ADDED", obj("a", 5))
    ledger.begin_listing()
    ledger.abandon_listing()
    assert set(ledger.applied) == {"a"} and ledger.behind_since is None


def test_pods_keep_no_tombstone():
    ledger = Ledger(tombstone=None)
    ledger.from_watch("ADDED", obj("a", 5))
    ledger.begin_listing()
    assert ledger.end_listing(set(), now=0.0) == [None]


def generations(ops: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """An object made again after its deletion is a new object (a new uid), as in Kubernetes."""
    made: dict[str, int] = {}
    alive: set[str] = set()
    out = []
    for name, put in ops:
        if put and name not in alive:
            made[name] = made.get(name, 0) + 1
            alive.add(name)
        elif not put:
            alive.discard(name)
        out.append((f"{name}{made.get(name, 0)}", put))
    return out


# The cluster's history: puts and deletes of a few objects, the version is the position.
OPS = st.lists(st.tuples(st.sampled_from("abc"), st.booleans()), min_size=1, max_size=25).map(generations)


def truth(ops: list[tuple[str, bool]], upto: int) -> dict[str, int]:
    state: dict[str, int] = {}
    for version, (uid, put) in enumerate(ops[:upto], start=1):
        if put:
            state[uid] = version
        else:
            state.pop(uid, None)
    return state


def events(ops: list[tuple[str, bool]], start: int, stop: int, state: dict[str, int]):
    """The watch's events for positions start..stop, as the API server sends them."""
    for version, (uid, put) in enumerate(ops[start:stop], start=start + 1):
        if put:
            yield ("MODIFIED" if uid in state else "ADDED"), obj(uid, version)
            state[uid] = version
        elif uid in state:
            del state[uid]
            yield "DELETED", obj(uid, version)


@settings(max_examples=300, deadline=None)
@given(OPS, st.data())
def test_after_a_listing_the_engine_holds_the_cluster_and_never_a_deleted_object(ops, data):
    n = len(ops)
    before = data.draw(st.integers(0, n), label="watch delivered before the listing")
    snapshot = data.draw(st.integers(before, n), label="listing snapshot")  # taken after the listing began
    during = data.draw(st.integers(before, n), label="watch delivered by the listing's end")
    engine: dict[str, int] = {}
    ledger = Ledger()

    def hand(event, o):
        uid, version = o["metadata"]["uid"], int(o["metadata"]["resourceVersion"])
        if event == "DELETED":
            engine.pop(uid, None)
        else:
            engine[uid] = version

    server: dict[str, int] = {}  # what the watch stream has said so far
    for event, o in events(ops, 0, before, server):
        if ledger.from_watch(event, o):
            hand(event, o)
    ledger.begin_listing()
    for event, o in events(ops, before, during, server):  # the watch goes on while the listing runs
        if ledger.from_watch(event, o):
            hand(event, o)
    listed = truth(ops, snapshot)
    for uid, version in sorted(listed.items()):
        o = obj(uid, version)
        if ledger.from_listing(o):
            hand(None, o)
    for stone in ledger.end_listing(set(listed), now=0.0, version=str(snapshot)):
        engine.pop(stone["metadata"]["uid"], None)
    assert engine == truth(ops, max(snapshot, during))
    for event, o in events(ops, during, n, server):  # the watch delivers the rest
        if ledger.from_watch(event, o):
            hand(event, o)
    assert engine == truth(ops, n)
    assert set(ledger.applied) == set(engine)


@settings(max_examples=200, deadline=None)
@given(OPS, st.data())
def test_a_watch_that_sent_nothing_while_the_listing_found_a_change_is_behind(ops, data):
    n = len(ops)
    before = data.draw(st.integers(0, n))
    snapshot = data.draw(st.integers(before, n))
    ledger = Ledger()
    server: dict[str, int] = {}
    for event, o in events(ops, 0, before, server):
        ledger.from_watch(event, o)
    ledger.begin_listing()
    listed = truth(ops, snapshot)
    for uid, version in sorted(listed.items()):
        ledger.from_listing(obj(uid, version))
    ledger.end_listing(set(listed), now=0.0)
    changed = any(truth(ops, before).get(uid) != v for uid, v in listed.items())
    assert (ledger.behind_since is not None) == changed
