"""The background loops of the writing replica: flush dirty owners to their
PlacementMemory (at most one write per owner per interval) and sweep (TTL, size bound,
fault expiry, stale promises). Each pass survives any exception; the Supervisor
(selfhealth.py) restarts a loop that dies anyway and fails liveness if it keeps dying."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from homing.config import Settings
from homing.engine.memory import forgetting
from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.kube.signals import logs, metrics
from homing.kube.store.store import Store

log = logs.get("homing.upkeep")


def forget_stale(index: MemoryIndex, settings: Settings, now: float) -> list[OwnerMemory]:
    """Forget owners past their TTL, then the least recently seen over the size bound."""
    lifetimes = settings.lifetimes
    gone = [m for m in map(index.forget, forgetting.expired(index, now, lifetimes.ttl_seconds)) if m is not None]
    gone += [m for m in map(index.forget, forgetting.over_bound(index, settings.bounds.max_ranks)) if m is not None]
    index.drop_expired_faults(now, lifetimes.fault_memory_seconds)
    index.promised.drop_expired(now)
    index.drop_old_vacancies(now, lifetimes.ttl_seconds)
    return gone


def forget_owner(index: MemoryIndex, store: Store | None, key: str, why: str) -> None:
    mem = index.forget(key)
    if store is not None:
        store.forgotten(key)
    if mem is not None:
        log.info("owner forgotten", owner=mem.owner.display, why=why)


def forget_namespace(index: MemoryIndex, store: Store | None, namespace: str) -> None:
    """A namespace that is gone or terminating takes its owners with it (nothing can be written there)."""
    for key in index.owners_in(namespace):
        forget_owner(index, store, key, "namespace gone")


def refresh_gauges(index: MemoryIndex) -> None:
    metrics.MEMORY_OWNERS.set(len(index.owners))
    metrics.MEMORY_RANKS.set(index.rank_count)


def index_gauges(index: MemoryIndex) -> dict[str, int]:
    """The size of each bounded map of the index (a pass over the owners: once a sweep, not
    once a write). Returns what it set."""
    sizes = {
        "owners": len(index.owners),
        "ranks": index.rank_count,
        "pool": sum(len(m.pool) for m in index.owners.values()),
        "live-pods": len(index.live),
        "vacant-homes": sum(len(owners) for owners in index.vacant.values()),
        "image-runs": index.images.count,
        "bursts": len(index.bursts),
        "promises": sum(len(p) for p in index.promises.values()),
        "waiting": len(index.waiting.pending),
    }
    for name, size in sizes.items():
        metrics.INDEX_ENTRIES.labels(name).set(size)
    return sizes


async def flush_once(index: MemoryIndex, store: Store) -> None:
    for key in await store.flush(index) or ():  # owners whose namespace is gone
        forget_owner(index, store, key, "namespace gone")
    refresh_gauges(index)


def always() -> bool:
    return True


async def flush_forever(index: MemoryIndex, store: Store, settings: Settings, leading: Callable[[], bool] = always) -> None:
    """Only the leader writes (behaviour.md "Operation"); a standby's changes stay dirty until it leads."""
    while True:
        await asyncio.sleep(settings.lifetimes.write_interval_seconds)
        if leading():
            await flush_once(index, store)
        else:
            refresh_gauges(index)


class Sweeper:
    """Forgets stale owners and deletes their PlacementMemory; a delete that failed (a
    timeout, the API server away) is tried again at the next sweep, unless the owner came
    back meanwhile."""

    def __init__(self, index: MemoryIndex, store: Store, settings: Settings, leading: Callable[[], bool] = always) -> None:
        self.index, self.store, self.settings, self.leading = index, store, settings, leading
        self.leftovers: dict[str, OwnerRef] = {}  # owner key -> owner whose objects remain

    async def once(self) -> None:
        for mem in forget_stale(self.index, self.settings, time.time()):
            log.info("owner forgotten", owner=mem.owner.display, ranks=len(mem.ranks), why="ttl or size bound")
            self.leftovers[mem.owner.key] = mem.owner
        index_gauges(self.index)
        if not self.leading():
            return  # a standby forgets in its index too; the leader deletes the objects
        for key, owner in list(self.leftovers.items()):
            if key in self.index.owners or await self.store.delete(owner):
                del self.leftovers[key]

    async def forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lifetimes.sweep_interval_seconds)
            await self.once()
