"""The one accelerator-request reading: names for scope, a count for room and job blocks."""
from __future__ import annotations

import pytest

from homing.engine.identity.accelerators import accelerator_request

PREFIXES = ("huawei.com/", "nvidia.com/")


def pod(containers=(), init=()):
    return {"spec": {"containers": list(containers), "initContainers": list(init)}}


def c(requests=None, limits=None):
    return {"name": "x", "resources": {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}}


@pytest.mark.parametrize("p, names, count, unreadable", [
    (pod([c({"huawei.com/Ascend910": "8", "cpu": "4"})]), ("huawei.com/Ascend910",), 8, False),
    (pod([c({"huawei.com/Ascend910": "4"}), c({"huawei.com/Ascend910": "4"})]), ("huawei.com/Ascend910",), 8, False),
    (pod([c(limits={"nvidia.com/gpu": "1"})]), ("nvidia.com/gpu",), 0, False),  # limits name it; requests hold it
    (pod([c({"cpu": "1"})], init=[c({"nvidia.com/gpu": "1"})]), ("nvidia.com/gpu",), 0, False),  # init runs before
    (pod([c({"huawei.com/Ascend910": "eight"})]), ("huawei.com/Ascend910",), 0, True),
    (pod([c({"huawei.com/Ascend910": "²"})]), ("huawei.com/Ascend910",), 0, True),
    (pod([c({"huawei.com/Ascend910": "9" * 20})]), ("huawei.com/Ascend910",), 0, True),
    (pod([{"resources": "bad"}, None, c(requests=["x"])]), (), 0, False),  # malformed: read as nothing
    ({"spec": None}, (), 0, False),
])
def test_accelerator_request(p, names, count, unreadable):
    got = accelerator_request(p, PREFIXES)
    assert (got.names, got.count, got.unreadable is not None) == (names, count, unreadable)


def test_one_admission_reads_the_pod_s_accelerator_request_once(monkeypatch):
    """Scope, the pod's load and its job's block sizes share one reading (issue 44, item 5)."""
    from homing.config import Settings
    from homing.engine.identity import WorkloadIndex, accelerators, scope
    from homing.engine.memory import loads
    from homing.engine.memory.index import MemoryIndex
    from homing.engine.model import ClusterSnapshot, Health, NodeState
    from homing.engine.placement import decide as decide_module
    from homing.engine.placement.job_kinds import facts

    from .helpers import NOW, npu_pod, owner

    calls = []

    def counted(pod, prefixes):
        calls.append(1)
        return accelerators.accelerator_request(pod, prefixes)

    for module in (scope, facts, loads, decide_module):
        monkeypatch.setattr(module, "accelerator_request", counted)
    job = owner(kind="Job", uid="job")
    index = MemoryIndex()
    index.record_bind(job, "0", "n0", (), NOW - 100)
    p = npu_pod(controller=job, annotations={"volcano.sh/task-index": "0"})
    d = decide_module.decide(p, index, WorkloadIndex(), ClusterSnapshot({"n0": NodeState("n0", Health.HEALTHY, npus=8)}),
                             Settings(), NOW)
    assert d.home == "n0" and len(calls) == 1
