"""SPEC 4.4: the candidate lists of the preferences beyond home, most relevant first.
Strategies bound them (SPEC 4.3's list bound) and turn them into terms."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from homing.engine.images import holding_all
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import ClusterSnapshot, Health


@dataclass(frozen=True, slots=True)
class BeyondHome:
    """What a strategy may prefer when home is not free: warm nodes, vacant homes to avoid."""

    warm: tuple[str, ...] = ()  # healthy nodes holding the pod's images, most relevant first
    vacant: tuple[str, ...] = ()  # other owners' (and siblings') vacant homes, most recent first


NOTHING = BeyondHome()


def warm_nodes(images: tuple[str, ...], snapshot: ClusterSnapshot, index: MemoryIndex, limit: int) -> tuple[str, ...]:
    """Where the images last ran (homing's memory, any owner) first, then the nodes whose
    kubelet reports them; healthy nodes only, at most `limit` + 1 (to tell a cut)."""
    if not images:
        return ()

    def candidates() -> Iterator[str]:
        yield from index.warm_nodes(images)
        yield from sorted(holding_all(images, snapshot.image_nodes))

    healthy = (n for n in dict.fromkeys(candidates()) if snapshot.health(n) is Health.HEALTHY)
    return tuple(islice(healthy, limit + 1))


def vacant_homes(index: MemoryIndex, skip_owner: str | None, limit: int) -> tuple[str, ...]:
    return tuple(islice(index.vacant_homes(skip_owner), limit + 1))
