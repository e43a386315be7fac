"""List-then-watch of one collection, outside kopf: MindCluster's per-node ConfigMaps
in two namespaces (so RBAC stays a Role there, where kopf would watch cluster-wide),
and the test harness's pod recorder. Lists again when the watch expires."""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from homing.operator import logs
from homing.operator.kube import Kube, KubeError

log = logs.get("homing.watching")

Handler = Callable[[str | None, dict], None]
Keep = Callable[[dict], bool]


async def watch_objects(kube: Kube, path: str, handle: Handler, keep: Keep = lambda _: True, retry: float = 5.0) -> None:
    """Calls `handle(None, obj)` for each listed object, then `handle(type, obj)` per event."""
    while True:
        try:
            listing = await kube.request("GET", path)
            for obj in listing.get("items") or []:
                if keep(obj):
                    handle(None, obj)
            version = (listing.get("metadata") or {}).get("resourceVersion") or ""
            await _stream(kube, path, version, keep, handle)
        except asyncio.CancelledError:
            raise
        except KubeError as err:
            log.warning("watch failed; retrying", path=path, status=err.status)
        except Exception as err:  # the API server went away: try again
            log.warning("watch interrupted; retrying", path=path, error=str(err))
        await asyncio.sleep(retry)


async def watch_prefixed(kube: Kube, namespace: str, prefix: str, handle: Handler, retry: float = 5.0) -> None:
    """One namespace's ConfigMaps whose name starts with `prefix`."""
    keep: Keep = lambda cm: (cm.get("metadata") or {}).get("name", "").startswith(prefix)  # noqa: E731
    await watch_objects(kube, f"/api/v1/namespaces/{namespace}/configmaps", handle, keep, retry)


async def _stream(kube: Kube, path: str, version: str, keep: Keep, handle: Handler) -> None:
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
        obj = event.get("object") or {}
        if keep(obj):
            handle(event.get("type"), obj)
