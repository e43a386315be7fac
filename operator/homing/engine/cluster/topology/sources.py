"""Keeps the ClusterSnapshot in step with its sources: Node objects, HyperNodes and
NodeD's verdicts. Each update recomputes only the nodes it can change: a node label
change that node's HyperNode path, a HyperNode change the paths of the nodes it contains
(behaviour.md "Operation": no full rebuild on the loop that serves admissions)."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from homing.config import Settings
from homing.engine.cluster.health import node_state
from homing.engine.cluster.images import node_images
from homing.engine.cluster.topology.hypernode_index import HyperNodeIndex
from homing.engine.cluster.topology.hypernodes import hypernode_name
from homing.engine.cluster.topology.resource_levels import LevelLabels, parse_resource_levels
from homing.engine.model import ClusterSnapshot, Health, NodeState


@dataclass(slots=True)
class _NodeInput:
    """The slice of a Node object the snapshot needs (not the whole object: 5,000 of those is a lot)."""

    metadata: dict[str, Any]
    spec: dict[str, Any]
    status: dict[str, Any]


@dataclass(slots=True)
class TopologySources:
    settings: Settings
    snapshot: ClusterSnapshot = field(default_factory=ClusterSnapshot)
    trees: LevelLabels = field(default_factory=dict)
    nodes: dict[str, _NodeInput] = field(default_factory=dict)
    hypernodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # as the API server has them, by name
    hyper_index: HyperNodeIndex = field(default_factory=HyperNodeIndex)
    noded: dict[str, Health] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # the latest topology warnings, for the log

    def __post_init__(self) -> None:
        self.trees, warning = parse_resource_levels(self.settings.topology.resource_level_config)
        if warning:
            self.warnings.append(warning)

    def _state(self, name: str) -> NodeState:
        raw = self.nodes[name]
        node = {"metadata": raw.metadata, "spec": raw.spec, "status": raw.status}
        return node_state(
            node,
            self.settings.labels,
            self.trees,
            self.hyper_index.paths.get(name, ()),
            self.noded.get(name),
            self.settings.scope.resource_prefixes,
        )

    def _refresh(self, name: str) -> tuple[NodeState | None, NodeState | None]:
        """(old, new) state of one node in the snapshot."""
        if name not in self.nodes:
            return self.snapshot.remove(name), None
        new = self._state(name)
        return self.snapshot.put(new), new

    def node_changed(self, node: dict[str, Any]) -> tuple[NodeState | None, NodeState | None]:
        meta = node.get("metadata") or {}
        name = meta.get("name") or ""
        old = self.snapshot.nodes.get(name)  # before a HyperNode rebuild can re-put it
        labels_before = self.nodes[name].metadata.get("labels") if name in self.nodes else None
        self.nodes[name] = _NodeInput(
            metadata={"name": name, "labels": dict(meta.get("labels") or {})},
            spec={"unschedulable": (node.get("spec") or {}).get("unschedulable"), "taints": (node.get("spec") or {}).get("taints") or []},
            status={
                "conditions": [c for c in (node.get("status") or {}).get("conditions") or () if (c or {}).get("type") == "Ready"],
                "allocatable": dict((node.get("status") or {}).get("allocatable") or {}),
                # normalised once, one string object per image for all nodes (behaviour.md "Beyond the home")
                "images": [{"names": [sys.intern(n) for n in sorted(node_images(node))]}],
            },
        )
        if labels_before != self.nodes[name].metadata["labels"]:
            self.hyper_index.set_node(name, self.nodes[name].metadata["labels"])  # a label selector may now (not) select it
            self._hypernode_warnings()
        return old, self._refresh(name)[1]

    def node_deleted(self, name: str) -> NodeState | None:
        self.nodes.pop(name, None)
        self.hyper_index.remove_node(name)
        self._hypernode_warnings()
        return self._refresh(name)[0]

    def hypernode_changed(self, hypernode: dict[str, Any], deleted: bool = False) -> list[str]:
        """One watch event: the current HyperNode warnings."""
        name = hypernode_name(hypernode)
        if deleted:
            self.hypernodes.pop(name, None)
            return self._repathed(self.hyper_index.remove(name))
        self.hypernodes[name] = {"metadata": {"name": name}, "spec": hypernode.get("spec") or {}}
        return self._repathed(self.hyper_index.put(self.hypernodes[name]))

    def hypernodes_listed(self, hypernodes: list[dict[str, Any]]) -> list[str]:
        """A whole listing (start-up, re-list): it replaces every HyperNode known, for the
        cost of one event. The current HyperNode warnings."""
        self.hypernodes = {hypernode_name(hn): {"metadata": {"name": hypernode_name(hn)}, "spec": hn.get("spec") or {}}
                           for hn in hypernodes}
        return self._repathed(self.hyper_index.load(self.hypernodes.values()))

    def _repathed(self, changed: set[str]) -> list[str]:
        """Put the nodes whose HyperNode path changed, and the HyperNode-wide results."""
        self.snapshot.selectors = self.hyper_index.selectors
        self.snapshot.max_tier = self.hyper_index.max_tier
        for name in changed & self.nodes.keys():
            self._refresh(name)
        self.warnings = self.hyper_index.warnings
        return list(self.warnings)

    def _hypernode_warnings(self) -> None:
        if self.hypernodes:  # else keep the start-up warnings (resource-level-config)
            self.warnings = self.hyper_index.warnings

    def noded_changed(self, node: str, health: Health | None) -> None:
        if health is None:
            self.noded.pop(node, None)
        else:
            self.noded[node] = health
        if node in self.nodes:
            self._refresh(node)
