"""bench/tidal.py's fault step names its two nodes by the ranks on them, so every variant of a
repeat faults ranks of the same jobs (and so of the same images), wherever its dawn put them."""
from __future__ import annotations

import pytest


def bound(*pairs: tuple[str, str]) -> dict[str, str]:
    return dict(pairs)


@pytest.mark.parametrize("ranks, jobs, expected", [
    # the lowest rank of the first job and of the job half-way down, whatever the node names
    (bound(("train-0/worker/1", "npu-040"), ("train-0/worker/0", "npu-041"), ("train-2/worker/3", "npu-001"),
           ("train-2/worker/2", "npu-007"), ("train-1/worker/0", "npu-000")), 4, ["npu-041", "npu-007"]),
    # the same jobs on other nodes: the same ranks faulted
    (bound(("train-0/worker/1", "npu-002"), ("train-0/worker/0", "npu-030"), ("train-2/worker/3", "npu-011"),
           ("train-2/worker/2", "npu-020"), ("train-1/worker/0", "npu-003")), 4, ["npu-030", "npu-020"]),
    # rank 10 after rank 9 (numbers, not strings)
    (bound(("train-0/worker/10", "a"), ("train-0/worker/9", "b"), ("train-1/worker/0", "c")), 2, ["b", "c"]),
    # a job with nothing bound: the next one down
    (bound(("train-0/worker/0", "a"), ("train-3/worker/1", "d")), 4, ["a", "d"]),
    # past the last job, round to the first bound one that is not faulted already
    (bound(("train-0/worker/0", "a"), ("train-1/worker/0", "b")), 4, ["a", "b"]),
    # kube-scheduler's Indexed Jobs: job/index
    (bound(("train-0/1", "a"), ("train-0/0", "b"), ("train-1/0", "c")), 2, ["b", "c"]),
    # one job bound: one node
    (bound(("train-1/worker/0", "a")), 2, ["a"]),
    (bound(), 2, []),
])
def test_faulted_nodes_are_named_by_rank(tidal, ranks, jobs, expected):
    assert tidal.faulted_nodes(ranks, jobs) == expected
