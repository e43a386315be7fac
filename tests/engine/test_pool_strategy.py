"""behaviour.md "Admission"/4.3 rankless pods: promise one free home of the pool, prefer the other free homes."""
from __future__ import annotations

import pytest

from homing.engine.model import Health, Operator
from homing.engine.placement.strategies import pool_strategy

from .helpers import HOSTNAME, NOW, by_role, memory, snapshot

H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY


def _run(pool, health=None, taken=(), home_w=100, other_w=50, max_values=256):
    """pool: node -> (seconds ago, warm); health: node -> Health (default healthy, None = gone)."""
    mem = memory(pool={n: (NOW - ago, warm) for n, (ago, warm) in pool.items()})
    health = health or {}
    nodes = {n: health.get(n, H) for n in pool if health.get(n, H) is not None}
    return pool_strategy(mem, snapshot(nodes), set(taken), home_w, other_w, HOSTNAME, max_values)


@pytest.mark.parametrize(
    "pool, health, taken, promise, others",
    [
        pytest.param({"a": (10, False), "b": (50, True), "c": (20, True)}, {}, (), "c", ("a", "b"),
                     id="warm-first-then-most-recent"),
        pytest.param({"a": (10, False), "b": (50, False)}, {}, (), "a", ("b",), id="all-cold-most-recent"),
        pytest.param({"a": (10, True), "b": (10, True)}, {}, (), "a", ("b",), id="tie-broken-by-name"),
        pytest.param({"a": (10, True), "b": (20, True), "c": (30, True)}, {}, ("a",), "b", ("c",), id="occupied-excluded"),
        pytest.param({"a": (10, True), "b": (20, True), "c": (30, True)}, {}, ("a", "b"), "c", None,
                     id="occupied-and-promised-excluded-last-one-left"),
        pytest.param({"a": (10, True), "b": (20, True), "c": (30, True), "d": (40, True)},
                     {"a": U, "b": S, "c": None}, (), "d", None, id="unhealthy-subhealthy-gone-excluded"),
        pytest.param({"a": (10, True)}, {}, (), "a", None, id="single-home"),
    ],
)
def test_pool_strategy(pool, health, taken, promise, others):
    placement = _run(pool, health, taken)
    terms = by_role(placement.terms)
    assert placement.promise == placement.home == promise
    assert placement.reason == "pool"
    assert terms["home"].values == (promise,)
    assert (terms["home"].weight, terms["home"].operator, terms["home"].key) == (100, Operator.IN, HOSTNAME)
    if others is None:
        assert "pool" not in terms
    else:
        assert terms["pool"].values == others
        assert (terms["pool"].weight, terms["pool"].operator) == (50, Operator.IN)
        assert promise not in terms["pool"].values


@pytest.mark.parametrize(
    "pool, health, taken",
    [
        pytest.param({"a": (1, True), "b": (2, True)}, {}, ("a", "b"), id="all-taken"),
        pytest.param({"a": (1, True), "b": (2, True)}, {"a": U, "b": None}, (), id="all-unusable"),
        pytest.param({"a": (1, True), "b": (2, True)}, {"a": S}, ("b",), id="mixed"),
    ],
)
def test_pool_exhausted(pool, health, taken):
    placement = _run(pool, health, taken)
    assert (placement.terms, placement.reason, placement.promise, placement.home) == ([], "pool-exhausted", None, None)


@pytest.mark.parametrize("mem", [pytest.param(None, id="no-memory"), pytest.param(memory(), id="empty-pool")])
def test_no_pool(mem):
    placement = pool_strategy(mem, snapshot(["a"]), set(), 100, 50, HOSTNAME, 256)
    assert (placement.terms, placement.reason, placement.promise) == ([], "no-memory", None)


def test_weights_are_passed_through():
    terms = by_role(_run({"a": (1, True), "b": (2, True)}, home_w=90, other_w=30).terms)
    assert (terms["home"].weight, terms["pool"].weight) == (90, 30)


def test_other_homes_bounded_keeps_the_most_relevant():
    """400 pool nodes, bound 256: the promise is the best, the term keeps the next 256 best."""
    pool = {f"n{i:03d}": (i, i % 2 == 0) for i in range(400)}  # even ones warm; lower i = more recent
    placement = _run(pool, max_values=256)
    order = sorted(pool, key=lambda n: (not pool[n][1], pool[n][0]))
    assert placement.promise == order[0] == "n000"
    others = by_role(placement.terms)["pool"].values
    assert len(others) == 256 and placement.truncated
    assert set(others) == set(order[1:257])


def test_not_truncated_at_exact_bound():
    pool = {f"n{i}": (i, True) for i in range(11)}
    placement = _run(pool, max_values=10)
    assert len(by_role(placement.terms)["pool"].values) == 10 and not placement.truncated
