"""The tidal harness's record of a step's end (TidalCluster.end_step): a gang the scheduler's
side has not brought back by then shows in the results instead of vanishing from every rate."""
from __future__ import annotations

import shutil

import pytest

from homing_e2e.tidal import PodSeen, TidalCluster


def _rank(key: str, node: str | None, leaving: bool = False) -> PodSeen:
    return PodSeen(key, "train:30g", 30.0, 8, 0.0, ranked=True, node=node, leaving=leaving)


@pytest.mark.parametrize("pods, expected", [
    pytest.param([_rank("a/worker/0", "n0"), _rank("a/worker/1", "n1"), _rank("b/worker/0", "n2"), _rank("b/worker/1", "n3")],
                 {}, id="every-rank-bound"),
    pytest.param([_rank("a/worker/0", "n0"), _rank("a/worker/1", None), _rank("b/worker/0", "n2"), _rank("b/worker/1", "n3")],
                 {"a": 1}, id="one-rank-pending"),
    pytest.param([_rank("a/worker/0", "n0"), _rank("a/worker/1", "n1")], {"b": 2}, id="a-gang-with-no-pods"),
    pytest.param([_rank("a/worker/0", "n0", leaving=True), _rank("a/worker/1", "n1"), _rank("b/worker/0", "n2"),
                  _rank("b/worker/1", "n3")], {"a": 1}, id="a-leaving-pod-holds-no-rank"),
])
def test_end_step_counts_ranks_without_a_node(pods, expected):
    c = TidalCluster("volcano", superpods=1, images={}, bandwidth_gbps=1)
    try:
        c.gang_sizes = {"a": 2, "b": 2}
        c.recorder.pods = {str(i): p for i, p in enumerate(pods)}
        assert c.end_step("night") == expected
        assert c.recorder.unbound_by_phase == ({"night": expected} if expected else {})
    finally:
        shutil.rmtree(c.workdir, ignore_errors=True)
