"""Two replicas on the real control plane (issue 10, SPEC 3 and 10): the leading replica
is SIGKILLed during a 300-pod burst of a remembered rankless workload. No pod creation
fails, nearly every pod carries a decision, no home is promised to two pods, and every
binding made before and during the takeover ends up in PlacementMemory."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from homing.operator.kube import Kube
from homing_e2e import failover
from homing_e2e import objects as o
from homing_e2e.replicaset import OperatorReplicas

pytestmark = pytest.mark.cluster

SCOPE_LABEL = "homing.io/ha-e2e"  # its own opt-in label: the session's operator stays out of the way


async def replica_set(kube: Kube, kubeconfig: Path, name: str, env: dict[str, str] | None = None) -> tuple[OperatorReplicas, str]:
    """An opted-in namespace for the pods, and the replicas' own namespace for Leases and the Secret."""
    system = await o.namespace(kube, f"{name}-sys", opted_in=False)
    ns = f"{name}-pods"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": {SCOPE_LABEL: "true"}}})
    await o.eventually(lambda: kube.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default"), what="default SA")
    replicas = OperatorReplicas(
        kubeconfig,
        Path(tempfile.mkdtemp(prefix=f"{name}-")),
        system,
        {
            "HOMING_SCOPE__NAMESPACE_LABEL": SCOPE_LABEL,
            "HOMING_SCOPE__POD_LABEL": SCOPE_LABEL,
            "HOMING_WEBHOOK__CONFIGURATION_NAME": name,
            **(env or {}),
        },
    )
    return replicas, ns


async def test_leader_killed_during_a_burst_loses_nothing(kube: Kube, kubeconfig: Path):
    name = f"ha-{o.short_id()}"
    replicas, ns = await replica_set(kube, kubeconfig, name)
    try:
        replicas.add()
        replicas.add()
        homes = await failover.nodes(kube, f"{name}-home", 200)
        spare = await failover.nodes(kube, f"{name}-spare", 10)
        owner = await o.owner_stand_in(kube, ns, "web")
        result = failover.BurstResult()
        await failover.remember(kube, ns, owner, homes, result)
        await failover.burst_with_leader_killed(kube, replicas, ns, owner, homes, spare, result=result)
        print("failover:", result.summary())
        assert result.failed_creations == 0
        assert result.decided >= 0.98 * result.pods
        assert result.duplicate_promises == []
        assert result.takeover_seconds is not None
        assert result.bound_during_takeover > 0  # the scenario did bind pods while nobody wrote
        assert len(result.bindings) == 200 + 300
        assert result.missing_from_memory == []
        assert result.promised > 100  # promises were made, on both sides of the kill
    finally:
        replicas.stop()
        for p in replicas.processes:
            print(f"operator log: {p.log_path}")
