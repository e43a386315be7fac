"""Start-up load of the durable mirror (behaviour.md "Memory"): every PlacementMemory, page by page,
large objects decoded in a worker thread, the loop free between any two objects. An
object the loader cannot read is skipped with a warning, never the start-up."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pydantic

from homing.engine.memory.index import MemoryIndex
from homing.kube.client import Kube, KubeError, pages
from homing.kube.signals import logs, metrics
from homing.placementmemory import GROUP, PLURAL, VERSION, Fragment, NameMismatch, NotWritten, belonging, merge, read_object

log = logs.get("homing.store")

LOAD_PAGE = 50  # objects a listing page: under 13 MiB of JSON however large they are
ENCODE_INLINE = 256  # owners this small are encoded and decoded on the loop: a thread hop costs more


@dataclass(slots=True)
class Loaded:
    objects: int = 0  # objects used
    shards: dict[str, int] = field(default_factory=dict)  # owner key -> objects it has in the API
    adopted: set[str] = field(default_factory=set)  # owner keys taken into the index


def _entries_in(item: dict[str, Any]) -> int:
    """About how many ranks and pool homes an object holds, without decoding it."""
    raw = item.get("status")
    status: dict[str, Any] = raw if isinstance(raw, dict) else {}
    rows = sum(len(status.get(f) or "") for f in ("rankRows", "poolRows") if isinstance(status.get(f), str))
    listed = sum(len(status.get(f) or ()) for f in ("ranks", "pool") if isinstance(status.get(f), list))
    return rows // 16 + listed



async def load(kube: Kube, index: MemoryIndex, owns: Callable[[str], bool] = lambda _: True) -> Loaded:
    """Adopt every owner with a readable primary object in a namespace this operator
    owns (a shard leaves the others' objects to their shard)."""
    parts: dict[str, list[Fragment]] = {}
    async for items in _pages(kube):
        for item in items:
            if not owns((item.get("metadata") or {}).get("namespace") or ""):
                continue
            fragment = await _read(item)
            if fragment is not None:
                parts.setdefault(fragment.owner.key, []).append(fragment)
            await asyncio.sleep(0)
    found = Loaded()
    for key, fragments in parts.items():
        found.shards[key] = max(f.index for f in fragments)
        used = await _adopt(index, fragments)
        if used:
            found.objects += used
            found.adopted.add(key)
        await asyncio.sleep(0)
    return found


async def _pages(kube: Kube) -> AsyncIterator[list[dict[str, Any]]]:
    """The listing a page at a time, so that start-up holds one page of JSON, not all."""
    try:
        async for items, _ in pages(kube, f"/apis/{GROUP}/{VERSION}/{PLURAL}", LOAD_PAGE, timeout=30):
            yield items
    except KubeError as err:
        if err.status == 404:
            raise RuntimeError("the PlacementMemory CRD is not installed: kubectl apply -k manifests/") from err
        raise


async def _read(item: dict[str, Any]) -> Fragment | None:
    meta = item.get("metadata") or {}
    where = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    try:
        if _entries_in(item) <= ENCODE_INLINE:
            return read_object(item)
        return await asyncio.to_thread(read_object, item)
    except NotWritten:  # its writer's next write fills it; nothing was lost
        log.info("PlacementMemory not yet written, skipped", **where)
    except pydantic.ValidationError as err:
        first = str(err.errors()[0]["msg"]) if err.errors() else ""
        _skipped("invalid status", where, errors=err.error_count(), first_error=first)
    except NameMismatch:
        _skipped("name does not match its owner", where)
    except Exception as err:  # any object, however broken, costs a warning, never the start-up
        _skipped("unreadable", where, error=f"{type(err).__name__}: {err}"[:300])
    return None


async def _adopt(index: MemoryIndex, fragments: list[Fragment]) -> int:
    """The objects used for one owner; 0 when they do not make one memory."""
    try:
        parts = belonging(fragments)
        large = sum(len(f.ranks) + len(f.pool) for f in parts) > ENCODE_INLINE
        index.adopt(await asyncio.to_thread(merge, parts) if large else merge(parts))
    except Exception as err:
        names = sorted(f.name for f in fragments)
        _skipped("its objects do not make one memory", {"names": names[:5]}, error=str(err)[:300])
        return 0
    return len(parts)


def _skipped(why: str, where: dict[str, Any], **detail: object) -> None:
    metrics.STORE_ERRORS.inc()
    log.warning(f"PlacementMemory skipped: {why}", **where, **detail)
