"""The scale-in marks (engine/deletion_cost.py): set on a replica bound to another
workload's claimed home, removed when the home is no longer claimed, never a user's cost."""
from __future__ import annotations

import pytest

from homing.engine.deletion_cost import MARK, Replica, marks

INFER, TRAIN = "ns/infer", "ns/train"


def replica(node: str, cost: str | None = None, owner: str = INFER) -> Replica:
    return Replica("ns", f"infer-{node}", owner, node, cost)


@pytest.mark.parametrize(
    "r, claimants, wanted",
    [
        pytest.param(replica("a"), {"a": {TRAIN}}, MARK, id="on-a-claimed-home-marked"),
        pytest.param(replica("a", MARK), {"a": {TRAIN}}, "keep", id="already-marked"),
        pytest.param(replica("a", MARK), {}, None, id="no-longer-claimed-unmarked"),
        pytest.param(replica("a", MARK), {"a": {INFER}}, None, id="claimed-by-its-own-pool-only-unmarked"),
        pytest.param(replica("a"), {"a": {INFER}}, "keep", id="its-own-pools-claim-is-no-reason"),
        pytest.param(replica("b"), {"a": {TRAIN}}, "keep", id="on-a-free-node"),
        pytest.param(replica("a", "5"), {"a": {TRAIN}}, "keep", id="a-users-cost-kept"),
        pytest.param(replica("a", "5"), {}, "keep", id="a-users-cost-never-removed"),
        pytest.param(replica("a", "-2147483001"), {}, "keep", id="a-value-near-homings-is-the-users"),
    ],
)
def test_marks(r: Replica, claimants: dict, wanted):
    got = marks([("uid", r)], claimants)
    if wanted == "keep":
        assert got == []
    else:
        (m,) = got
        assert (m.uid, m.namespace, m.name, m.value, m.node) == ("uid", "ns", r.name, wanted, r.node)
        assert m.claimant == (TRAIN if wanted else None)


def test_the_mark_parses_as_int32_near_its_floor():
    """The controller parses the cost as an int32: the mark must fit and sit below any cost
    a user would set."""
    assert -(2**31) < int(MARK) < -(2**31) + 1000
