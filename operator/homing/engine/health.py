"""SPEC 5.3: a node's health from its object, and its topology path from its labels."""
from __future__ import annotations

from homing.config import Labels
from homing.engine.model import Health, NodeState

UNHEALTHY_TAINTS = frozenset(
    {"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable"}
)


def node_health(node: dict, labels: Labels) -> Health:
    spec = node.get("spec") or {}
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    if spec.get("unschedulable"):
        return Health.UNHEALTHY
    if any((t or {}).get("key") in UNHEALTHY_TAINTS for t in spec.get("taints") or ()):
        return Health.UNHEALTHY
    ready = [c for c in (node.get("status") or {}).get("conditions") or () if (c or {}).get("type") == "Ready"]
    if not ready or ready[0].get("status") != "True":
        return Health.UNHEALTHY
    if labels.fault in node_labels:
        return Health.UNHEALTHY
    if labels.sub_health in node_labels:
        return Health.SUB_HEALTHY
    return Health.HEALTHY


def node_topology(node: dict, labels: Labels) -> tuple[tuple[str, str], ...]:
    """(level, domain) pairs, innermost first; levels the node has no label for are left out."""
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    path = []
    for level, key in (("rack", labels.rack), ("superPod", labels.superpod)):
        value = node_labels.get(key)
        if value:
            path.append((level, str(value)))
    return tuple(path)


def node_state(node: dict, labels: Labels) -> NodeState:
    return NodeState(
        name=(node.get("metadata") or {}).get("name") or "",
        health=node_health(node, labels),
        topology=node_topology(node, labels),
    )
