"""behaviour.md "Weights" for ordinary NPU/GPU pods: home term, keep clear of siblings' homes, avoid faults."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from homing.config import Bounds, Labels, Settings, Weights
from homing.engine.memory import MemoryIndex
from homing.engine.model import Health, Operator
from homing.engine.placement.strategies import node_strategy

from .helpers import HOSTNAME, NOW, by_role, context, memory, owner, snapshot

H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY
HOUR = 3600.0
ALL = ["n0", "n1", "n2", "n3", "f1", "f2"]


@dataclass
class Case:
    ranks: dict  # rank -> node
    rank: str = "0"
    health: dict = field(default_factory=dict)  # node -> Health; nodes not listed are healthy; None: gone
    faults: list = field(default_factory=list)  # (node, seconds ago) for `rank`
    home: tuple | None = None  # expected home term values
    keep_clear: tuple | None = None
    avoid: tuple | None = None
    reason: str = "home"
    placement_home: str | None = None


def _snap(case: Case):
    nodes = {}
    for n in ALL:
        h = case.health.get(n, H)
        if h is not None:
            nodes[n] = h
    return snapshot(nodes)


CASES = [
    pytest.param(Case(ranks={"0": "n0", "1": "n1", "2": "n2"}, home=("n0",), keep_clear=("n1", "n2"),
                      placement_home="n0"), id="home-healthy"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, health={"n0": S}, keep_clear=("n1",), reason="home-sub-healthy"),
                 id="home-sub-healthy-no-home-no-avoid"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, health={"n0": U}, keep_clear=("n1",), avoid=("n0",),
                      reason="home-unhealthy"), id="home-unhealthy-avoided"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, health={"n0": None}, keep_clear=("n1",), reason="home-gone"),
                 id="home-gone-no-terms-for-it"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, faults=[("f1", 10), ("f2", 600)], home=("n0",), keep_clear=("n1",),
                      avoid=("f1", "f2"), placement_home="n0"), id="faults-avoided"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, faults=[("n0", 10)], keep_clear=("n1",), avoid=("n0",),
                      reason="home-faulted"), id="home-is-fault"),
    pytest.param(Case(ranks={"0": "n0"}, faults=[("n0", HOUR + 1), ("f1", HOUR)], home=("n0",), placement_home="n0"),
                 id="expired-faults-ignored"),
    pytest.param(Case(ranks={"0": "n0"}, health={"n0": U}, faults=[("f2", 1)], avoid=("f2", "n0"),
                      reason="home-unhealthy"), id="unhealthy-home-and-fault"),
    pytest.param(Case(ranks={"0": "n0"}, health={"n0": U}, faults=[("n0", 1)], avoid=("n0",), reason="home-faulted"),
                 id="unhealthy-home-that-is-a-fault-listed-once"),
    pytest.param(Case(ranks={"0": "n0"}, faults=[("f1", 1)], health={"f1": None}, home=("n0",), avoid=("f1",),
                      placement_home="n0"), id="gone-fault-still-avoided"),
    pytest.param(Case(ranks={"1": "n1", "2": "n2"}, rank="0", keep_clear=("n1", "n2"), reason="no-memory"),
                 id="no-own-memory-keeps-clear-of-siblings"),
    pytest.param(Case(ranks={"0": "n0", "1": "n0", "2": "n2"}, home=("n0",), keep_clear=("n2",), placement_home="n0"),
                 id="home-shared-with-sibling-not-in-keep-clear"),
    pytest.param(Case(ranks={"0": "n0", "1": "n0"}, home=("n0",), placement_home="n0"),
                 id="only-sibling-on-own-home-no-keep-clear"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1", "2": "n1"}, home=("n0",), keep_clear=("n1",), placement_home="n0"),
                 id="sibling-homes-listed-once"),
    pytest.param(Case(ranks={"0": "n0", "1": "n1"}, health={"n1": U}, home=("n0",), keep_clear=("n1",),
                      placement_home="n0"), id="unhealthy-sibling-home-still-kept-clear"),
]


@pytest.mark.parametrize("case", CASES)
def test_node_strategy(case: Case):
    mem = memory(ranks=case.ranks, faults={case.rank: [(n, NOW - ago) for n, ago in case.faults]} if case.faults else None)
    placement = node_strategy(context(case.rank, mem, _snap(case)))
    terms = by_role(placement.terms)
    # no sibling's home is claimed here (the context names none): the claimed term lists the avoided nodes
    expected = {"home": case.home, "keep-clear": case.keep_clear, "avoid": case.avoid, "claimed": case.avoid}
    assert set(terms) == {role for role, values in expected.items() if values is not None}
    for role, values in expected.items():
        if values is not None:
            assert tuple(sorted(terms[role].values)) == values, role
            assert terms[role].key == HOSTNAME
    if "home" in terms:
        assert (terms["home"].weight, terms["home"].operator) == (100, Operator.IN)
    if "keep-clear" in terms:
        assert (terms["keep-clear"].weight, terms["keep-clear"].operator) == (Settings().weights.keep_clear, Operator.NOT_IN)
    if "avoid" in terms:
        assert (terms["avoid"].weight, terms["avoid"].operator) == (100, Operator.NOT_IN)
        assert (terms["claimed"].weight, terms["claimed"].operator) == (160, Operator.NOT_IN)
    assert placement.reason == case.reason
    assert placement.home == case.placement_home
    assert tuple(sorted(placement.avoided)) == (case.avoid or ())
    assert placement.truncated is False


def test_no_memory_at_all():
    placement = node_strategy(context("0", None, snapshot(ALL)))
    assert (placement.terms, placement.reason, placement.home) == ([], "no-memory", None)


def test_weights_and_label_keys_come_from_settings():
    settings = Settings(
        weights=Weights(home=100, domains=[40, 25], image_warm=10, keep_clear=5, displace=20, avoid_fault=90, claimed=150),
        labels=Labels(hostname="example.com/host"),
    )
    mem = memory(ranks={"0": "n0", "1": "n1"}, faults={"0": [("f1", NOW)]})
    terms = by_role(node_strategy(context("0", mem, snapshot(ALL), settings)).terms)
    assert {r: (t.weight, t.key) for r, t in terms.items()} == {
        "home": (100, "example.com/host"),
        "keep-clear": (5, "example.com/host"),
        "avoid": (90, "example.com/host"),
        "claimed": (150, "example.com/host"),
    }


def _settings(max_values: int) -> Settings:
    return Settings(bounds=Bounds(max_term_values=max_values))


def test_keep_clear_bound_keeps_nearest_ranks():
    """300 ranks on 300 nodes, rank 150, bound 256: the 128 nearest ranks on each side."""
    mem = memory(ranks={str(i): f"node-{i:03d}" for i in range(300)})
    placement = node_strategy(context("150", mem, snapshot(mem.ranks[str(i)].node for i in range(300))))
    keep = by_role(placement.terms)["keep-clear"]
    assert placement.truncated is True
    assert len(keep.values) == 256
    assert set(keep.values) == {f"node-{i:03d}" for i in range(22, 279) if i != 150}


def test_keep_clear_bound_at_the_edge_rank():
    mem = memory(ranks={str(i): f"node-{i:03d}" for i in range(300)})
    placement = node_strategy(context("0", mem, snapshot([]), _settings(10)))
    keep = by_role(placement.terms)["keep-clear"]
    assert set(keep.values) == {f"node-{i:03d}" for i in range(1, 11)}
    assert placement.truncated


def test_keep_clear_bound_for_rank_without_memory():
    mem = memory(ranks={str(i): f"node-{i:03d}" for i in range(0, 100) if i != 50})
    keep = by_role(node_strategy(context("50", mem, snapshot([]), _settings(4))).terms)["keep-clear"]
    assert set(keep.values) == {"node-048", "node-049", "node-051", "node-052"}


@pytest.mark.parametrize(
    "siblings, limit, truncated",
    [
        pytest.param(256, 256, False, id="exactly-at-bound"),
        pytest.param(257, 256, True, id="one-over"),
        pytest.param(3, 3, False, id="small-at-bound"),
        pytest.param(4, 3, True, id="small-over"),
    ],
)
def test_keep_clear_truncation_flag(siblings, limit, truncated):
    mem = memory(ranks={"0": "own", **{str(i): f"s{i}" for i in range(1, siblings + 1)}})
    placement = node_strategy(context("0", mem, snapshot(["own"]), _settings(limit)))
    keep = by_role(placement.terms)["keep-clear"]
    assert placement.truncated is truncated
    assert len(keep.values) == min(siblings, limit)
    assert "own" not in keep.values


def test_avoid_bound_keeps_unhealthy_home_first():
    mem = memory(ranks={"0": "zz-home"}, faults={"0": [(f"f{i}", NOW) for i in range(5)]})
    placement = node_strategy(context("0", mem, snapshot({"zz-home": U}), _settings(3)))
    avoid = by_role(placement.terms)["avoid"]
    assert len(avoid.values) == 3 and "zz-home" in avoid.values
    assert placement.truncated


def test_every_term_respects_the_bound():
    mem = memory(ranks={str(i): f"n{i}" for i in range(600)}, faults={"7": [(f"f{i}", NOW) for i in range(600)]})
    placement = node_strategy(context("7", mem, snapshot({"n7": U})))
    assert all(len(t.values) <= 256 for t in placement.terms)
    assert placement.truncated


# -- regressions ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "ranks, rank, limit, expected",
    [
        pytest.param({str(i): f"n{i}" for i in range(11)}, "5", 3, {"n4", "n6", "n3"}, id="dense-tie-lower-first"),
        pytest.param({"0": "a", "1000": "b", "2000": "c", "3000": "d", "5000": "e"}, "1500", 2, {"b", "c"},
                     id="sparse-nearest"),
        pytest.param({"0": "a", "1000": "b", "2000": "c", "3000": "d", "5000": "e"}, "1500", 3, {"a", "b", "c"},
                     id="sparse-tie-lower-first"),
        pytest.param({"0": "a", "1000": "b", "2000": "c", "3000": "d", "5000": "e"}, "9000", 1, {"e"},
                     id="sparse-beyond-last"),
        pytest.param({"ps/1": "p", "worker/1": "w", "worker/2": "x", "worker/9": "y"}, "worker/2", 2, {"p", "w"},
                     id="two-keys-same-index"),
        pytest.param({"0": "s", "1": "s", "2": "s", "3": "t", "9": "u"}, "4", 2, {"s", "t"}, id="shared-nodes-count-once"),
    ],
)
def test_keep_clear_nearest_when_bounded(ranks, rank, limit, expected):
    placement = node_strategy(context(rank, memory(ranks=ranks), snapshot([]), _settings(limit)))
    assert set(by_role(placement.terms)["keep-clear"].values) == expected
    assert placement.truncated


def test_keep_clear_fresh_after_memory_is_forgotten_and_rebuilt():
    """Regression: siblings' homes were cached on (owner uid, memory version); a memory
    forgotten (PlacementMemory deleted by hand, TTL) and rebuilt for the same uid got
    the old memory's sibling homes once its version caught up."""
    index = MemoryIndex()
    ref = owner()
    snap = snapshot(["n1", "n2", "n3"])
    index.record_bind(ref, "0", "n1", (), NOW)
    index.record_bind(ref, "1", "n2", (), NOW)
    first = by_role(node_strategy(context("0", index.owner(ref.key), snap)).terms)["keep-clear"]
    assert first.values == ("n2",)
    index.forget(ref.key)
    index.record_bind(ref, "0", "n1", (), NOW + 1)
    index.record_bind(ref, "1", "n3", (), NOW + 1)
    again = by_role(node_strategy(context("0", index.owner(ref.key), snap)).terms)["keep-clear"]
    assert again.values == ("n3",)
