"""What the operator knows of the cluster besides pods: which namespaces opted in,
ReplicaSets (to lift pods to their Deployment), nodes, HyperNodes, NodeD verdicts and
PodGroups. Each observe_* takes one watch event as a plain dict and never raises."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from homing.config import Settings
from homing.engine.cluster.topology import mindcluster
from homing.engine.cluster.topology.sources import TopologySources
from homing.engine.identity import WorkloadIndex
from homing.engine.identity.owner import controller_ref
from homing.kube.signals import logs, metrics

log = logs.get("homing.cluster")

PODGROUP_SPEC_KEYS = ("minMember", "networkTopology", "subGroupPolicy")  # all that job kinds read


def never_raises(method: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input gets a warning, never an exception out of a handler."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception:
            log.exception("handler failed; input ignored", handler=method.__name__)
            return None

    return guarded


class ClusterState:
    def __init__(self, settings: Settings, on_namespace_gone: Callable[[str], None] | None = None) -> None:
        self.settings = settings
        self.workloads = WorkloadIndex()
        self.topology = TopologySources(settings)
        self.snapshot = self.topology.snapshot
        self.podgroups: dict[tuple[str, str], dict[str, Any]] = {}
        self.opted_in: set[str] = set()  # namespaces labelled for homing
        self.on_namespace_gone = on_namespace_gone or (lambda _: None)
        # told every Node event after the snapshot took it (kube/leader/image_labels.py)
        self.node_listeners: list[Callable[[str | None, dict[str, Any]], None]] = []
        for warning in self.topology.warnings:
            log.warning("topology configuration", detail=warning)

    @never_raises
    def observe_namespace(self, event: str | None, ns: dict[str, Any]) -> None:
        meta: Any = ns.get("metadata") or {}  # JSON: a namespace always has a name
        name: str = meta.get("name")
        s = self.settings.scope
        if event == "DELETED" or (ns.get("status") or {}).get("phase") == "Terminating":
            self.opted_in.discard(name)
            self.on_namespace_gone(name)  # its owners go with it: nothing can be written there
        elif (meta.get("labels") or {}).get(s.namespace_label) == s.namespace_label_value:
            self.opted_in.add(name)
        elif name in self.opted_in:
            self.opted_in.discard(name)
            if not s.pod_opt_in:  # left a shard: its owners are another shard's now, forgotten here, not deleted
                self.on_namespace_gone(name)

    @never_raises
    def observe_replicaset(self, event: str | None, rs: dict[str, Any]) -> None:
        meta = rs.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        if event == "DELETED":
            self.workloads.forget_replicaset(namespace, meta.get("uid"))
        elif meta.get("uid"):
            self.workloads.learn_replicaset(namespace, meta["uid"], controller_ref(meta, namespace))

    @never_raises
    def observe_node(self, event: str | None, node: dict[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name")
        if not name:
            return
        if event == "DELETED":
            old, new = self.topology.node_deleted(name), None
            log.info("node gone; memories that name it keep it until they expire", node=name)
        else:
            old, new = self.topology.node_changed(node)
        self._count_health(old, new)
        for listener in self.node_listeners:
            listener(event, node)

    def _count_health(self, old: Any, new: Any) -> None:
        if old is not None:
            metrics.NODES.labels(old.health.value).dec()
        if new is not None:
            metrics.NODES.labels(new.health.value).inc()
            if old is not None and old.health is not new.health:
                log.info("node health changed", node=new.name, health=new.health.value, was=old.health.value)

    @never_raises
    def observe_hypernode(self, event: str | None, hypernode: dict[str, Any]) -> None:
        for warning in self.topology.hypernode_changed(hypernode, deleted=event == "DELETED"):
            log.warning("HyperNode topology", detail=warning)

    @never_raises
    def observe_podgroup(self, event: str | None, podgroup: dict[str, Any]) -> None:
        meta = podgroup.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if event == "DELETED":
            self.podgroups.pop(key, None)
            return
        spec = podgroup.get("spec") or {}
        self.podgroups[key] = {
            "metadata": {"annotations": dict(meta.get("annotations") or {}), "labels": dict(meta.get("labels") or {}),
                         "creationTimestamp": meta.get("creationTimestamp")},  # the queue order of the marks
            "spec": {k: spec[k] for k in PODGROUP_SPEC_KEYS if k in spec},
        }

    @never_raises
    def observe_nodeinfo(self, event: str | None, configmap: dict[str, Any]) -> None:
        """NodeD's verdict on a node (when the NodeD source is enabled)."""
        node = mindcluster.node_of(configmap, mindcluster.NODE_INFO_PREFIX)
        if node is None:
            return
        health = None
        if event != "DELETED":
            try:
                health = mindcluster.noded_health(configmap)
            except ValueError as bad:
                log.warning("NodeD ConfigMap ignored", node=node, detail=str(bad))
        old = self.snapshot.nodes.get(node)
        self.topology.noded_changed(node, health)
        self._count_health(old, self.snapshot.nodes.get(node))
