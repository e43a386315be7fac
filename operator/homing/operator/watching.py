"""List-then-watch of one collection, outside kopf: MindCluster's per-node ConfigMaps
in two namespaces (so RBAC stays a Role there, where kopf would watch cluster-wide),
and the test harness's pod recorder. Thin wrappers over `reflector.Reflector`."""
from __future__ import annotations

from homing.operator.kube import Kube
from homing.operator.reflector import Handler, Keep, Reflector

__all__ = ["Handler", "Keep", "Reflector", "watch_objects", "watch_prefixed"]


async def watch_objects(kube: Kube, path: str, handle: Handler, keep: Keep = lambda _: True, retry: float = 5.0) -> None:
    """Calls `handle(None, obj)` for each listed object, then `handle(type, obj)` per event."""
    resource = path.rstrip("/").rsplit("/", 1)[-1]
    await Reflector(kube, resource, path, handle, keep=keep, retry=retry).run()


async def watch_prefixed(kube: Kube, namespace: str, prefix: str, handle: Handler, retry: float = 5.0) -> None:
    """One namespace's ConfigMaps whose name starts with `prefix`."""
    keep: Keep = lambda cm: (cm.get("metadata") or {}).get("name", "").startswith(prefix)  # noqa: E731
    await watch_objects(kube, f"/api/v1/namespaces/{namespace}/configmaps", handle, keep, retry)
