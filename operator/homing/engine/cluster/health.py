"""behaviour.md "Health": a node's health; behaviour.md "Topology": its topology path from its labels."""
from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import Any

from homing.config import Labels
from homing.engine.cluster.images import image_labels_of, node_images
from homing.engine.cluster.topology.resource_levels import LevelLabels, tree_of
from homing.engine.model import Health, NodeState, Path

UNHEALTHY_TAINTS = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})
CORDON_TAINT = "node.kubernetes.io/unschedulable"  # the taint that mirrors spec.unschedulable
_WORST = MappingProxyType({Health.HEALTHY: 0, Health.SUB_HEALTHY: 1, Health.UNAVAILABLE: 2, Health.UNHEALTHY: 3})


def node_health(node: dict[str, Any], labels: Labels) -> Health:
    """Faults first (a cordoned node that is also NotReady is unhealthy), then maintenance."""
    spec = node.get("spec") or {}
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    taints = {(t or {}).get("key") for t in spec.get("taints") or ()}
    if taints & UNHEALTHY_TAINTS:
        return Health.UNHEALTHY
    ready = [c for c in (node.get("status") or {}).get("conditions") or () if (c or {}).get("type") == "Ready"]
    if not ready or ready[0].get("status") != "True":
        return Health.UNHEALTHY
    if labels.fault in node_labels:
        return Health.UNHEALTHY
    if spec.get("unschedulable") or CORDON_TAINT in taints:
        return Health.UNAVAILABLE
    if labels.sub_health in node_labels:
        return Health.SUB_HEALTHY
    return Health.HEALTHY


def worst(*healths: Health | None) -> Health:
    return max((h for h in healths if h is not None), key=_WORST.__getitem__, default=Health.HEALTHY)


def label_path(node_labels: dict[str, str], labels: Labels, trees: LevelLabels) -> tuple[Path, tuple[tuple[str, str], ...]]:
    """(level, domain) pairs innermost first, and the label key each came from:
    rack and super-pod labels, then the multilevel levels of the node's tree."""
    keyed = [("rack", labels.rack), ("superPod", labels.superpod), *trees.get(tree_of(node_labels), ())]
    found = [(level, key, node_labels[key]) for level, key in keyed if node_labels.get(key)]
    return tuple((level, str(value)) for level, _, value in found), tuple((level, key) for level, key, _ in found)


def node_topology(node: dict[str, Any], labels: Labels) -> Path:
    return label_path((node.get("metadata") or {}).get("labels") or {}, labels, {})[0]


def allocatable_npus(node: dict[str, Any], prefixes: Iterable[str]) -> int | None:
    prefixes = tuple(prefixes)
    counts = [
        int(str(v))
        for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()
        if str(k).startswith(prefixes) and str(v).isdigit()
    ]
    return max(counts) if counts else None


def node_state(
    node: dict[str, Any],
    labels: Labels,
    trees: LevelLabels | None = None,
    hyper_path: Path = (),
    noded: Health | None = None,
    prefixes: Iterable[str] = ("huawei.com/", "nvidia.com/"),
) -> NodeState:
    node_labels = (node.get("metadata") or {}).get("labels") or {}
    path, keys = label_path(node_labels, labels, trees or {})
    return NodeState(
        name=(node.get("metadata") or {}).get("name") or "",
        health=worst(node_health(node, labels), noded),
        topology=path + hyper_path,
        keys=keys,
        npus=allocatable_npus(node, prefixes),
        images=node_images(node),
        image_labels=image_labels_of(node_labels, labels.image_prefix),
    )
