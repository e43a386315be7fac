"""Events on pods (behaviour.md "Admission" Outcome, behaviour.md "Identity" warnings) and on
workloads (a PlacementMemory write refused, behaviour.md "Memory"), through a queued,
aggregating recorder as client-go's is: a handler only queues (it never waits on the API), one
worker posts them in order, an Event repeated for the same object, reason and message within
`events.aggregate_seconds` is counted instead of posted, and past `events.queue` waiting
Events new ones are dropped and counted. Bounded: the queue, and the aggregation keys (at most
four queues' worth, oldest forgotten first)."""
from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from homing.config import Events
from homing.engine.model import OwnerRef
from homing.kube.client import Kube
from homing.kube.signals import logs, metrics

log = logs.get("homing.events")

Key = tuple[str, str, str, str]  # namespace, object uid (or name), reason, message


class EventPoster:
    def __init__(self, kube: Kube, enabled: Callable[[], bool] | None = None, settings: Events | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kube = kube
        self.enabled = enabled  # several replicas: only the leader posts, so each Event is posted once
        self.settings = settings or Events()
        self.clock = clock
        self.queue: deque[tuple[dict[str, Any], str, str, str]] = deque()
        self.recent: OrderedDict[Key, float] = OrderedDict()  # key -> when it was last queued
        self._worker: asyncio.Task[None] | None = None

    def post(self, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
        if not self.settings.enabled or (self.enabled is not None and not self.enabled()):
            return
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("uid") or meta.get("name") or "", reason, message)
        now = self.clock()
        last = self.recent.get(key)
        if last is not None and now - last < self.settings.aggregate_seconds:
            metrics.EVENTS.labels("aggregated").inc()
            return
        if len(self.queue) >= self.settings.queue:
            metrics.EVENTS.labels("dropped").inc()
            return
        self.recent.pop(key, None)
        self.recent[key] = now
        while len(self.recent) > 4 * self.settings.queue:
            self.recent.popitem(last=False)
        self.queue.append((obj, kind, reason, message))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._drain())

    def refused(self, owner: OwnerRef, status: int, message: str) -> None:
        """The API server refused the owner's PlacementMemory for good: say so on the owner."""
        about = {"apiVersion": owner.api_version, "kind": owner.kind,
                 "metadata": {"name": owner.name, "namespace": owner.namespace, "uid": owner.uid}}
        self.post(about, "Warning", "PlacementMemoryRefused", f"HTTP {status}: {message}")

    async def _drain(self) -> None:
        while self.queue:
            await self._post(*self.queue.popleft())

    async def _post(self, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name') or 'pod'}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion") or "v1",
                "kind": obj.get("kind") or "Pod",
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
            metrics.EVENTS.labels("posted").inc()
        except Exception as err:  # an Event is best effort
            metrics.EVENTS.labels("failed").inc()
            log.warning("event not posted", pod=meta.get("name"), reason=reason, error=str(err))
