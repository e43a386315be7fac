"""The durable mirror (behaviour.md "Memory"): each owner's memory in one PlacementMemory, or in
several when it is large (placementmemory/), written at most once per owner per
interval and loaded back page by page at start-up.

Nothing here raises into its caller's loop. A write that fails waits before it is tried
again (2 s, doubling to 5 min); an owner whose namespace is gone is handed back to the
caller and never tried again; an object the loader cannot read is skipped with a warning."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.kube.signals import logs, metrics
from homing.kube.store import loader
from homing.kube.store.loader import ENCODE_INLINE
from homing.kube.watch.retries import NamespaceGone, Retry, SchemaOutdated, backoff, namespace_gone
from homing.placementmemory import GROUP, PLURAL, STATUS_BUDGET, VERSION, Encoded, encode, resource_body, shard_name, snapshot

log = logs.get("homing.store")

def _collection(namespace: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"


class Store:
    def __init__(
        self,
        kube: Kube,
        budget: int = STATUS_BUDGET,
        on_refused: Callable[[OwnerRef, int, str], None] | None = None,
    ) -> None:
        self.kube = kube
        self.budget = budget
        self.on_refused = on_refused  # a write the API server refused (4xx): owner, status, message
        self.clock: Callable[[], float] = time.monotonic
        self.created: set[str] = set()  # owner keys whose objects 1..shards[key] are known to exist
        self.shards: dict[str, int] = {}  # owner key -> objects it has, or may have, in the API
        self.retries: dict[str, Retry] = {}  # owner key -> failed writes in a row
        self.gone: set[str] = set()  # owner keys whose namespace is gone: never written again

    # -- start-up -------------------------------------------------------------------------
    async def load(self, index: MemoryIndex, owns: Callable[[str], bool] = lambda _: True) -> int:
        """Adopt every owner with a readable primary object in a namespace `owns` accepts
        (loader.py); returns the objects used."""
        found = await loader.load(self.kube, index, owns)
        self.shards.update(found.shards)  # the next write deletes any left over
        self.created.update(found.adopted)
        return found.objects

    # -- writes ---------------------------------------------------------------------------
    async def flush(self, index: MemoryIndex) -> list[str]:
        """Write every owner that changed since the last flush and is not waiting out a
        failure. Never raises. Returns the owner keys whose namespace is gone or
        terminating: they can never be written, the caller forgets them."""
        pending = sorted(index.dirty)
        index.dirty = set()
        gone: list[str] = []
        done, now = 0, self.clock()
        try:
            for key in pending:
                if await self._flush_owner(index, key, now):
                    gone.append(key)
                done += 1
        finally:
            index.dirty.update(pending[done:])  # cancelled halfway: the rest stays dirty
        return gone

    async def _flush_owner(self, index: MemoryIndex, key: str, now: float) -> bool:
        """One owner's write; True when its namespace is gone."""
        mem = index.owner(key)
        if mem is None:
            return False
        owner_key = mem.owner.key
        if owner_key in self.gone:
            return True
        retry = self.retries.get(owner_key)
        if retry is not None and retry.not_before > now:
            index.dirty.add(key)
            return False
        try:
            await self.write(mem)
        except NamespaceGone:
            self._namespace_gone(mem.owner)
            return True
        except Exception as err:  # every failure, 4xx, 5xx, timeout or a bug, waits its turn
            index.dirty.add(key)
            self._failed(mem.owner, err, now)
            return False
        self.retries.pop(owner_key, None)
        return False

    async def write(self, mem: OwnerMemory) -> None:
        """Every object of the owner: shards first, the primary (which counts them) last,
        then the shards no longer needed. Raises on failure."""
        encoded = await self._encode(mem)
        owner, key = mem.owner, mem.owner.key
        known = self.shards.get(key, 0)
        existing = known if key in self.created else 0
        statuses = encoded.statuses
        for number in [*range(2, len(statuses) + 1), 1]:
            await self._put(owner, number, statuses[number - 1], exists=number <= existing)
        self.created.add(key)
        self.shards[key] = max(known, len(statuses))
        if known > len(statuses):
            await self._drop_shards(owner, len(statuses) + 1, known)
        metrics.STORE_WRITES.inc()
        if encoded.dropped:
            log.warning("PlacementMemory entries too large to write", owner=owner.display, dropped=len(encoded.dropped))

    async def _encode(self, mem: OwnerMemory) -> Encoded:
        snap = snapshot(mem)  # on the loop: C-speed copies
        if snap.size <= ENCODE_INLINE:
            return encode(snap, self.budget)
        return await asyncio.to_thread(encode, snap, self.budget)  # off the loop that serves admissions

    async def _put(self, owner: OwnerRef, number: int, status: dict[str, Any], exists: bool) -> None:
        if not exists:
            await self._create(owner, number)
        try:
            answer = await self._patch(owner, number, status)
        except KubeError as err:
            if err.status != 404 or not exists:
                raise
            await self._create(owner, number)  # deleted under us: create it again
            answer = await self._patch(owner, number, status)
        if "epoch" not in (answer.get("status") or {}):
            raise SchemaOutdated("the API server dropped status.epoch: apply crds/placementmemory.yaml")

    async def _create(self, owner: OwnerRef, number: int) -> None:
        try:
            await self.kube.request("POST", _collection(owner.namespace), body=resource_body(owner, number))
        except KubeError as err:
            if err.status == 409:
                return
            if namespace_gone(err, owner.namespace):
                raise NamespaceGone(owner.namespace) from err
            raise

    async def _patch(self, owner: OwnerRef, number: int, status: dict[str, Any]) -> dict[str, Any]:
        path = f"{_collection(owner.namespace)}/{shard_name(owner, number)}/status"
        body = {"status": {**status, "ranks": None, "pool": None}}  # null: the earlier form goes
        return await self.kube.request("PATCH", path, body=body, content_type=MERGE_PATCH)

    async def _drop_shards(self, owner: OwnerRef, first: int, last: int) -> None:
        """Delete shards an owner no longer needs; one left behind is retried at the next
        write, and the loader ignores it meanwhile (the primary's count leaves it out)."""
        for number in range(last, first - 1, -1):
            if not await self._delete_object(owner, number):
                return
            self.shards[owner.key] = number - 1

    def _failed(self, owner: OwnerRef, err: Exception, now: float) -> None:
        retry = self.retries.get(owner.key)
        failures = retry.failures + 1 if retry else 1
        wait = backoff(failures)
        self.retries[owner.key] = Retry(failures, now + wait)
        status = err.status if isinstance(err, KubeError) else None
        refused = status is not None and 400 <= status < 500
        metrics.STORE_ERRORS.inc()
        log.warning(
            "PlacementMemory not written",
            owner=owner.display,
            status=status,
            refused=refused,
            error=f"{type(err).__name__}: {err}"[:300],
            failures=failures,
            retry_in=wait,
        )
        if status is not None and refused and self.on_refused is not None:
            try:
                self.on_refused(owner, status, str(err))
            except Exception as hook_err:  # a reporting hook must not break the flush
                log.warning("PlacementMemory refusal not reported", owner=owner.display, error=str(hook_err))

    def _namespace_gone(self, owner: OwnerRef) -> None:
        self.gone.add(owner.key)
        self.retries.pop(owner.key, None)
        log.warning("PlacementMemory not written: namespace gone", owner=owner.display, namespace=owner.namespace)

    # -- forgetting -----------------------------------------------------------------------
    async def delete(self, owner: OwnerRef) -> bool:
        """Delete every object of a forgotten owner, the primary first (a shard without it
        is ignored by the loader). Never raises: False when something was left behind, to
        be tried again (what the store knows of the owner stays until then)."""
        last = max(self.shards.get(owner.key, 1), 1)
        for number in range(1, last + 1):
            if not await self._delete_object(owner, number):
                return False
        self.forgotten(owner.key)
        return True

    async def _delete_object(self, owner: OwnerRef, number: int) -> bool:
        name = shard_name(owner, number)
        try:
            await self.kube.request("DELETE", f"{_collection(owner.namespace)}/{name}")
        except KubeError as err:
            if err.status == 404:
                return True
            self._not_deleted(owner, name, err)
            return False
        except Exception as err:  # timeouts, connection errors: the sweeper must live on
            self._not_deleted(owner, name, err)
            return False
        return True

    @staticmethod
    def _not_deleted(owner: OwnerRef, name: str, err: Exception) -> None:
        metrics.STORE_ERRORS.inc()
        status = err.status if isinstance(err, KubeError) else None
        log.warning("PlacementMemory not deleted", owner=owner.display, name=name, status=status,
                    error=f"{type(err).__name__}: {err}"[:300])

    def forgotten(self, key: str) -> None:
        """The index forgot the owner: drop what the store knows of it."""
        self.created.discard(key)
        self.shards.pop(key, None)
        self.retries.pop(key, None)
        self.gone.discard(key)
