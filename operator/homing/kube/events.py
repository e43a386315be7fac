"""Events on pods (behaviour.md "Admission" Outcome, behaviour.md "Identity" warnings) and on workloads (a PlacementMemory
write refused, behaviour.md "Memory"), posted in the background so a handler never waits on them."""
from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Callable
from typing import Any

from homing.engine.model import OwnerRef
from homing.kube import logs
from homing.kube.client import Kube

log = logs.get("homing.events")


class EventPoster:
    def __init__(self, kube: Kube, enabled: Callable[[], bool] | None = None) -> None:
        self.kube = kube
        self.enabled = enabled  # several replicas: only the leader posts, so each Event is posted once
        self._tasks: set[asyncio.Task[None]] = set()

    def post(self, pod: dict[str, Any], kind: str, reason: str, message: str) -> None:
        if self.enabled is not None and not self.enabled():
            return
        task = asyncio.get_running_loop().create_task(self._post(pod, kind, reason, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def refused(self, owner: OwnerRef, status: int, message: str) -> None:
        """The API server refused the owner's PlacementMemory for good: say so on the owner."""
        about = {"apiVersion": owner.api_version, "kind": owner.kind,
                 "metadata": {"name": owner.name, "namespace": owner.namespace, "uid": owner.uid}}
        self.post(about, "Warning", "PlacementMemoryRefused", f"HTTP {status}: {message}")

    async def _post(self, pod: dict[str, Any], kind: str, reason: str, message: str) -> None:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name') or 'pod'}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": pod.get("apiVersion") or "v1",
                "kind": pod.get("kind") or "Pod",
                "name": meta.get("name"),
                "namespace": namespace,
                "uid": meta.get("uid"),
            },
            "type": kind,
            "reason": reason,
            "message": message[:1000],
            "source": {"component": "homing"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
        except Exception as err:  # an Event is best effort
            log.warning("event not posted", pod=meta.get("name"), reason=reason, error=str(err))
