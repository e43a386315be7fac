"""Plain-language words for the reasons homing writes in `homing.io/decision` (behaviour.md "Admission", "Weights")
and in its outcome Events."""
from __future__ import annotations

DECISION = {
    "home": "its rank ran on {home} before and the node is healthy: homing prefers it",
    "home-sub-healthy": "its rank ran on {home}, which is sub-healthy: still preferred, with less weight",
    "home-unavailable": "its rank ran on {home}, which is cordoned or drained: not preferred until it is back",
    "home-unhealthy": "its rank ran on {home}, which is unhealthy: avoided",
    "home-gone": "its rank's last node no longer exists",
    "home-faulted": "its rank's pod ended on {home} while the node was faulty: avoided for the fault memory",
    "no-memory": "homing has no memory of this rank (first placement or a scale-out)",
    "pool": "a replica of a rankless workload: promised {home}, a warm node of the owner's pool that no other replica holds",
    "pool-exhausted": "a replica of a rankless workload: every node of the owner's pool is taken or promised",
}

PREFERENCES = {
    "image-warm": "nodes that already hold the pod's images",
    "displace-few": "the nodes of the one lower-priority workload this burst displaces",
    "vacant-homes": "keep clear of other workloads' vacant homes",
}

AWAY = {
    "home-unhealthy": "home was unhealthy",
    "home-unavailable": "home was cordoned or drained",
    "home-gone": "home no longer exists",
    "home-busy": "home was busy with another pod",
    "unknown": "the scheduler chose another node",
}


def decision_text(reason: str, home: str | None) -> str:
    template = DECISION.get(reason)
    return template.format(home=home or "?") if template else f"reason {reason!r}"
