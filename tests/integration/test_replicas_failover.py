"""Two replicas on the real control plane (behaviour.md "Admission" and "Operation"): the leading replica
is SIGKILLed during a 300-pod burst of a remembered rankless workload. No pod creation
fails, nearly every pod carries a decision, no home is promised to two pods, and every
binding made before and during the takeover ends up in PlacementMemory. And a rollout
of homing's Deployment to a new image tag loses no memory and no admission."""
from __future__ import annotations

from pathlib import Path

import pytest

from homing.kube.client import Kube
from homing_e2e import failover, objects as o, pod_runner
from homing_e2e.cluster import webhook_calls_failed_open

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
    # Promises were made (how many depends on how the API server's connections fall on the
    # replicas: each promises only from its own share of the pool).
    assert result.promised > 0


async def test_deployment_image_change_rolls_out_without_losing_memory(kube: Kube, kubeconfig: Path):
    """The real Deployment and ReplicaSet controllers roll homing's Deployment to a new image
    tag (maxSurge 1, maxUnavailable 0); pod_runner.py runs each pod as an operator process
    and stops it as a kubelet would. Pods keep coming: all answered, all bindings remembered."""
    name = f"dep-{o.short_id()}"
    replicas, ns = await failover.replica_set(kube, kubeconfig, name)
    system = f"{name}-sys"
    runner = pod_runner.PodRunner(kube, replicas, system, pod_runner.SELECTOR, await pod_runner.control_node(kube, f"{name}-cp"))
    try:
        await kube.request("POST", f"/apis/apps/v1/namespaces/{system}/deployments", body=pod_runner.deployment("homing:0.1.0"))
        runner.start()
        await o.eventually(lambda: pod_runner.rolled_out(kube, system, "homing:0.1.0"), timeout=180, what="two ready replicas")
        first = set(runner.running)
        w = await failover.remembered_workload(kube, replicas, ns, name, homes=60, spare=5, start=False)
        result = await failover.rolling_upgrade(
            kube, replicas, ns, w.owner, w.homes, w.spare, result=w.result,
            replace=lambda: pod_runner.roll_image(kube, system, "homing:0.1.1", runner),
        )
        print("deployment rollout:", result.summary(), "pods run:", runner.started)
        assert not first & set(runner.running) and len(runner.started) == 4  # both pods replaced, one at a time
        assert replicas.leader() is not None
    finally:
        await runner.stop()
        replicas.stop()
    assert result.pods > 50 and result.failed_creations == 0
    # none unserved; a miss carries the API server's reasons
    assert result.decided == result.pods, webhook_calls_failed_open(kubeconfig)
    assert result.duplicate_promises == []
    assert result.missing_from_memory == []
