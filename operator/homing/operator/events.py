"""Events on pods (SPEC 3 Outcome, SPEC 1.2 warnings), posted in the background so a
handler never waits on them."""
from __future__ import annotations

import asyncio
import datetime
import uuid

from homing.operator import logs
from homing.operator.kube import Kube

log = logs.get("homing.events")


class EventPoster:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._tasks: set[asyncio.Task] = set()

    def post(self, pod: dict, kind: str, reason: str, message: str) -> None:
        task = asyncio.get_running_loop().create_task(self._post(pod, kind, reason, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _post(self, pod: dict, kind: str, reason: str, message: str) -> None:
        meta = pod.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name') or 'pod'}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
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
