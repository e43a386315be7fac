"""A paged LIST of one collection, handed over object by object with the loop let go
every few milliseconds (behaviour.md "Operation": an admission never waits behind a
listing). Used by the start-up load and the re-list of every kopf-watched kind
(watches.py), and by the ConfigMap reflectors (reflector.py)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from homing.kube.client import Kube, pages

Deliver = Callable[[dict[str, Any]], bool]  # True when the object counts as listed (a filter may refuse it)


class Slicer:
    """Lets admissions in once the objects handled since the last turn took a slice. A
    count of 50 pod events held an admission up to ~20 ms at 5,000 nodes."""

    def __init__(self, seconds: float = 0.002, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self._started = 0.0

    async def turn(self) -> None:
        now = self.clock()
        if now - self._started >= self.seconds:
            await asyncio.sleep(0)
            self._started = self.clock()


async def list_pages(
    kube: Kube, path: str, deliver: Deliver, *, page_size: int = 500, slicer: Slicer | None = None,
    accept: str = "application/json",
) -> tuple[set[str], str]:
    """Every object, page by page; returns the listed uids and the listing's resourceVersion.
    `accept`: client.METADATA_ONLY for a listing of identities."""
    slicer = slicer or Slicer()
    uids: set[str] = set()
    version = ""
    async for items, listed_at in pages(kube, path, page_size, accept=accept):
        version = listed_at  # the first page's, on every page
        for obj in items:
            if deliver(obj):
                uids.add((obj.get("metadata") or {}).get("uid") or "")
            await slicer.turn()
    uids.discard("")
    return uids, version
