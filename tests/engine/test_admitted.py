"""What an admission leaves in the memory (engine/placement/admitted.py): table-driven, from
plain decisions and pods; the index shows each part and nothing more."""
from __future__ import annotations

import pytest
from tests.engine.helpers import NOW, owner, pod

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import Burst
from homing.engine.placement.admitted import admitted, apply
from homing.engine.placement.decide import Decision

POOL = owner(kind="ReplicaSet", name="qwen")


def _npu_pod() -> dict:
    """As the webhook sees it: the API server has defaulted requests from limits."""
    p = pod(name="qwen-x", controller=POOL, resources={"huawei.com/Ascend910": "8"})
    p["spec"]["containers"][0]["resources"]["requests"] = {"huawei.com/Ascend910": "8"}
    return p


NPU_POD = _npu_pod()


def _index(remembered: bool) -> MemoryIndex:
    index = MemoryIndex()
    if remembered:
        index.record_bind(POOL, None, "n1", (), NOW - 60)
        index.dirty.clear()
    return index


@pytest.mark.parametrize("decision, remembered, expect", [
    pytest.param(Decision(outcome="skipped", reason="out-of-scope"), True, None, id="skipped-leaves-nothing"),
    pytest.param(Decision(outcome="none", reason="no-controller"), True, None, id="no-owner-leaves-nothing"),
    pytest.param(Decision(outcome="pool", reason="pool", owner_key=POOL.key, promise="n1"), True,
                 {"admitted": 1, "dirty": True, "promised": {"n1"}, "inflight": 1, "burst": None}, id="a-promise"),
    pytest.param(Decision(outcome="none", reason="new", owner_key=POOL.key), False,
                 {"admitted": None, "dirty": False, "promised": set(), "inflight": 1, "burst": None}, id="first-pod-of-a-new-owner"),
    pytest.param(Decision(outcome="pool", reason="pool", owner_key=POOL.key, burst=Burst(last=NOW, count=3, victim="ns/g")), True,
                 {"admitted": 1, "dirty": True, "promised": set(), "inflight": 1, "burst": ("ns/g", 3)}, id="a-burst-agreed"),
])
def test_an_admission_leaves_its_parts(decision, remembered, expect):
    index = _index(remembered)
    left = admitted(decision, NPU_POD, Settings(), NOW)
    if expect is None:
        assert left is None
        return
    apply(index, left)
    mem = index.owner(POOL.key)
    assert (mem.stats.admitted if mem else None) == expect["admitted"]
    assert (POOL.key in index.dirty) is expect["dirty"]
    assert index.promised.nodes(POOL.key, NOW + 1) == expect["promised"]
    assert len(index.waiting.inflight.get(POOL.key, ())) == expect["inflight"]
    held = next(iter(index.bursts.values()), None)
    assert ((held.victim, held.count) if held else None) == expect["burst"]


def test_a_promise_expires_as_configured():
    settings = Settings()
    index = _index(True)
    apply(index, admitted(Decision(outcome="pool", reason="pool", owner_key=POOL.key, promise="n1"), NPU_POD, settings, NOW))
    assert index.promised.nodes(POOL.key, NOW + settings.lifetimes.promise_seconds - 0.1) == {"n1"}
    assert index.promised.nodes(POOL.key, NOW + settings.lifetimes.promise_seconds + 0.1) == set()


def test_a_pod_without_accelerators_takes_no_room_ahead():
    index = _index(True)
    plain = pod(name="qwen-y", controller=POOL, resources={"cpu": "1"})
    apply(index, admitted(Decision(outcome="pool", reason="pool", owner_key=POOL.key), plain, Settings(), NOW))
    assert POOL.key not in index.waiting.inflight
