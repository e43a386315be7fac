"""behaviour.md "Identity": a rankless pod's pool is its owner's group's when it has one: a KubeRay
worker group comes back to the nodes that group ran on, not to another group's."""
from __future__ import annotations

import pytest

from homing.config import Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.identity.pool_group import pool_group
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import decide

from .helpers import NOW, owner, pod

RAY = owner(kind="RayCluster", name="ray", api_version="ray.io/v1")


@pytest.mark.parametrize(
    "labels, group",
    [
        pytest.param({"ray.io/group": "gpu-workers"}, "gpu-workers", id="ray-worker-group"),
        pytest.param({"ray.io/node-type": "worker"}, None, id="no-group-label"),
        pytest.param({"ray.io/group": ""}, None, id="empty"),
        pytest.param({"ray.io/group": "x" * 64}, None, id="longer-than-a-label-value"),
        pytest.param(None, None, id="no-labels"),
    ],
)
def test_pool_group(labels, group):
    assert pool_group(pod(labels=labels)) == group


def worker(group: str, i: int) -> dict:
    return pod(name=f"ray-{group}-{i}", controller=RAY, labels={"ray.io/group": group})


def test_each_worker_group_is_promised_its_own_nodes():
    index = MemoryIndex()
    for node, group in (("a1", "small"), ("a2", "small"), ("b1", "big")):
        index.record_bind(RAY, None, node, (), NOW - 60, group=group)
    snap = ClusterSnapshot({n: NodeState(n, Health.HEALTHY) for n in ("a1", "a2", "b1", "c")})
    big = decide(worker("big", 0), index, WorkloadIndex(), snap, Settings(), NOW)
    small = decide(worker("small", 0), index, WorkloadIndex(), snap, Settings(), NOW)
    assert big.promise == "b1" and small.promise in {"a1", "a2"}
    other = {t.role: t.values for t in small.terms}["pool"]
    assert "b1" not in other and set(other) | {small.promise} == {"a1", "a2"}, "only the group's own homes"


def test_a_node_that_changes_group_leaves_the_old_groups_pool():
    index = MemoryIndex()
    index.record_bind(RAY, None, "a1", (), NOW - 60, group="small")
    index.mark_warm(RAY, None, "a1", NOW - 50)
    assert index.record_bind(RAY, None, "a1", (), NOW, group="big")
    entry = index.owner(RAY.key).pool["a1"]
    assert entry.group == "big" and not entry.warm, "the big group's image is not there yet"
