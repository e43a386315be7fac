"""The durable mirror: one PlacementMemory per owner, written at most once per owner
per interval, loaded back at start-up. Invalid objects are skipped with a warning."""
from __future__ import annotations

import pydantic

from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.operator import logs, metrics
from homing.operator.kube import MERGE_PATCH, Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION, PlacementMemoryStatus, from_status, resource_body, resource_name, to_status

log = logs.get("homing.store")


def _collection(namespace: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"


class Store:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.created: set[str] = set()  # owner uids whose resource is known to exist

    async def load(self, index: MemoryIndex) -> int:
        """Adopt every valid PlacementMemory; returns how many were loaded."""
        loaded = 0
        try:
            items = await self.kube.list_all(f"/apis/{GROUP}/{VERSION}/{PLURAL}")
        except KubeError as err:
            if err.status == 404:
                raise RuntimeError("the PlacementMemory CRD is not installed: kubectl apply -k manifests/") from err
            raise
        for item in items:
            meta = item.get("metadata") or {}
            try:
                status = PlacementMemoryStatus.model_validate(item.get("status") or {})
            except pydantic.ValidationError as err:
                metrics.STORE_ERRORS.inc()
                log.warning(
                    "PlacementMemory skipped: invalid status",
                    name=meta.get("name"),
                    namespace=meta.get("namespace"),
                    errors=err.error_count(),
                    first_error=str(err.errors()[0]["msg"]) if err.errors() else "",
                )
                continue
            mem = from_status(status, meta.get("namespace") or "")
            if resource_name(mem.owner) != meta.get("name"):
                log.warning("PlacementMemory skipped: name does not match its owner", name=meta.get("name"))
                continue
            index.adopt(mem)
            self.created.add(mem.owner.uid)
            loaded += 1
        return loaded

    async def write(self, mem: OwnerMemory) -> None:
        owner = mem.owner
        base = _collection(owner.namespace)
        if owner.uid not in self.created:
            try:
                await self.kube.request("POST", base, body=resource_body(owner))
            except KubeError as err:
                if err.status != 409:
                    raise
            self.created.add(owner.uid)
        status = to_status(mem).model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            await self.kube.request(
                "PATCH", f"{base}/{resource_name(owner)}/status", body={"status": status}, content_type=MERGE_PATCH
            )
        except KubeError as err:
            if err.status == 404:
                self.created.discard(owner.uid)  # deleted under us: create it again next time
            raise
        metrics.STORE_WRITES.inc()

    async def flush(self, index: MemoryIndex) -> None:
        """Write every owner that changed since the last flush, once."""
        dirty, index.dirty = index.dirty, set()
        for uid in sorted(dirty):
            mem = index.owner(uid)
            if mem is None:
                continue
            try:
                await self.write(mem)
            except Exception as err:
                metrics.STORE_ERRORS.inc()
                index.dirty.add(uid)
                log.warning("PlacementMemory not written", owner=mem.owner.display, error=str(err))

    async def delete(self, owner: OwnerRef) -> None:
        self.created.discard(owner.uid)
        try:
            await self.kube.request("DELETE", f"{_collection(owner.namespace)}/{resource_name(owner)}")
        except KubeError as err:
            if err.status != 404:
                metrics.STORE_ERRORS.inc()
                log.warning("PlacementMemory not deleted", owner=owner.display, error=str(err))
