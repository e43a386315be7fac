"""Two replicas on the real control plane (issue 10, SPEC 3 and 10): the leading replica
is SIGKILLed during a 300-pod burst of a remembered rankless workload. No pod creation
fails, nearly every pod carries a decision, no home is promised to two pods, and every
binding made before and during the takeover ends up in PlacementMemory."""
from __future__ import annotations

from pathlib import Path

import pytest

from homing.operator.kube import Kube
from homing_e2e import failover
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster


async def test_leader_killed_during_a_burst_loses_nothing(kube: Kube, kubeconfig: Path):
    async with failover.remembered(kube, kubeconfig, f"ha-{o.short_id()}", homes=200, spare=10) as (replicas, ns, w):
        result = await failover.burst_with_leader_killed(kube, replicas, ns, w.owner, w.homes, w.spare, result=w.result)
        print("failover:", result.summary())
    assert result.failed_creations == 0
    assert result.standby_writes == 0 < result.leader_writes  # one writer: the standby watched, answered, wrote nothing
    assert result.decided >= 0.98 * result.pods
    assert result.duplicate_promises == []
    assert result.takeover_seconds is not None
    assert result.bound_during_takeover > 0  # the scenario did bind pods while nobody wrote
    assert len(result.bindings) == 200 + 300
    assert result.missing_from_memory == []
    assert result.promised > 100  # promises were made, on both sides of the kill


async def test_rolling_upgrade_loses_no_memory_and_serves_every_admission(kube: Kube, kubeconfig: Path):
    """Each of two replicas replaced in turn (new one ready, then the old one stopped) while
    pods are created: every pod carries a decision and every binding is remembered."""
    async with failover.remembered(kube, kubeconfig, f"roll-{o.short_id()}", homes=60, spare=5) as (replicas, ns, w):
        result = await failover.rolling_upgrade(kube, replicas, ns, w.owner, w.homes, w.spare, result=w.result)
        print("rolling upgrade:", result.summary())
    assert result.pods > 50 and result.failed_creations == 0
    assert result.decided == result.pods  # none unserved
    assert result.duplicate_promises == []
    assert result.missing_from_memory == []
    assert result.takeover_seconds is not None  # the writer changed hands
