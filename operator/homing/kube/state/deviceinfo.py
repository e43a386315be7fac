"""MindCluster device info onto node labels (behaviour.md "Topology"): affinity terms can only match
labels, so the super-pod and rack ids MindCluster reports per node are copied there."""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from homing.engine.cluster.topology import mindcluster
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.kube.runtime import Runtime
from homing.kube.signals import logs

log = logs.get("homing.deviceinfo")


class DeviceInfoCopier:
    """Copies MindCluster's SuperPodID/RackID onto the node's topology labels, so that
    affinity terms (which can only match labels) can name the super-pod and rack."""

    def __init__(self, rt: Runtime, kube: Kube, leading: Callable[[], bool] | None = None) -> None:
        self.rt, self.kube = rt, kube
        self.leading = leading  # several replicas: only the leader writes node labels
        self._tasks: set[asyncio.Task[None]] = set()

    def handle(self, event: str | None, configmap: dict[str, Any]) -> None:
        node = mindcluster.node_of(configmap, mindcluster.DEVICE_INFO_PREFIX)
        if node is None or event == "DELETED" or (self.leading is not None and not self.leading()):
            return
        try:
            superpod, rack = mindcluster.device_info_ids(configmap)
        except ValueError as bad:
            log.warning("device-info ConfigMap ignored", node=node, detail=str(bad))
            return
        labels = self.rt.settings.labels
        current = self.rt.cluster.topology.nodes.get(node)
        have = current.metadata["labels"] if current else {}
        want = {labels.superpod: superpod, labels.rack: rack}
        patch = {k: v for k, v in want.items() if have.get(k) != v}
        if current is None or not patch:
            return
        task = asyncio.get_running_loop().create_task(self._label(node, patch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _label(self, node: str, labels: dict[str, Any]) -> None:
        try:
            await self.kube.request("PATCH", f"/api/v1/nodes/{node}", body={"metadata": {"labels": labels}}, content_type=MERGE_PATCH)
            log.info("node topology labels copied from device info", node=node, labels=labels)
        except KubeError as err:
            log.warning("node topology labels not written", node=node, status=err.status)
