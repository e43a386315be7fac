"""Watches one namespace's ConfigMaps with a name prefix (MindCluster's per-node
device-info and NodeD ConfigMaps): list, then watch from that resourceVersion, and
list again when the watch expires. Namespaced, so RBAC stays a Role in that namespace."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from homing.operator import logs
from homing.operator.kube import Kube, KubeError

log = logs.get("homing.configmaps")

Handler = Callable[[str | None, dict], None]


async def watch_prefixed(kube: Kube, namespace: str, prefix: str, handle: Handler, retry: float = 5.0) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    while True:
        try:
            listing = await kube.request("GET", path)
            for cm in listing.get("items") or []:
                if (cm.get("metadata") or {}).get("name", "").startswith(prefix):
                    handle(None, cm)
            version = (listing.get("metadata") or {}).get("resourceVersion") or ""
            await _stream(kube, path, version, prefix, handle)
        except asyncio.CancelledError:
            raise
        except KubeError as err:
            log.warning("ConfigMap watch failed; retrying", namespace=namespace, status=err.status)
        except Exception as err:  # the API server went away: try again
            log.warning("ConfigMap watch interrupted; retrying", namespace=namespace, error=str(err))
        await asyncio.sleep(retry)


async def _stream(kube: Kube, path: str, version: str, prefix: str, handle: Handler) -> None:
    resp = await kube.api.call_api(
        path,
        "GET",
        query_params=[("watch", "true"), ("resourceVersion", version), ("allowWatchBookmarks", "false")],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _request_timeout=3600,
    )
    if resp.status != 200:
        raise KubeError(resp.status, (await resp.read()).decode(errors="replace"))
    async for line in resp.content:
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("type") == "ERROR":
            return  # usually 410 Gone: list again
        cm = event.get("object") or {}
        if (cm.get("metadata") or {}).get("name", "").startswith(prefix):
            handle("DELETED" if event.get("type") == "DELETED" else event.get("type"), cm)
