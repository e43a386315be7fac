"""Memory entries. Slotted dataclasses, not pydantic: a large cluster keeps a million
of them, and the benchmark holds them to under 1 KB a rank. Times are epoch seconds."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homing.engine.model import OwnerRef

Topology = tuple[tuple[str, str], ...]  # (level name, domain value), innermost first


@dataclass(slots=True)
class FaultMark:
    node: str
    at: float


@dataclass(slots=True)
class RankEntry:
    node: str
    bound_at: float
    topology: Topology = ()
    previous_node: str | None = None
    warm: bool = False
    faults: list[FaultMark] | None = None  # None, not [], for the common case: saves memory
    group: str | None = None  # Volcano sub-group at bind time (HyperNode jobs)


@dataclass(slots=True)
class PoolEntry:
    last_used: float
    warm: bool = False
    group: str | None = None  # the owner's pool group it last served (behaviour.md "Identity": KubeRay worker group)


@dataclass(slots=True)
class Stats:
    admitted: int = 0
    home: int = 0
    domain: int = 0
    elsewhere: int = 0


def rank_index(key: str) -> int:
    """The number block arithmetic uses: the last part of `<spec>/<index>` or `<g>/<w>`."""
    tail = key.rsplit("/", 1)[-1]
    return int(tail) if tail.isascii() and tail.isdigit() else 0  # "²".isdigit(), int("²") raises


@dataclass(slots=True)
class OwnerMemory:
    owner: OwnerRef
    last_seen: float
    ranks: dict[str, RankEntry] = field(default_factory=dict)
    pool: dict[str, PoolEntry] = field(default_factory=dict)
    stats: Stats = field(default_factory=Stats)
    seen_marked: float | None = None  # last_seen as of the last time it was marked for writing
    # Derived from `ranks`, kept up to date by the rules so that an admission never
    # scans every rank of a 4,096-rank owner: ranks per home node, rank keys per index.
    home_counts: dict[str, int] = field(default_factory=dict)
    keys_by_index: dict[int, list[str]] = field(default_factory=dict)
    # Bumped whenever a rank's home changes; engine/memory/siblings.py caches its view of the homes
    # along the rank axis against it. None of the three is part of what the memory says.
    version: int = field(default=0, compare=False, repr=False)
    sibling_runs: Any = field(default=None, compare=False, repr=False)
    sibling_asked: int = field(default=-1, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.seen_marked is None:
            self.seen_marked = self.last_seen
        self.home_counts.clear()
        self.keys_by_index.clear()
        for key, entry in self.ranks.items():
            self.link(key, entry.node)

    def link(self, key: str, node: str) -> None:
        self.version += 1
        self.home_counts[node] = self.home_counts.get(node, 0) + 1
        self.keys_by_index.setdefault(rank_index(key), []).append(key)

    def _uncount(self, node: str) -> None:
        left = self.home_counts[node] - 1
        if left:
            self.home_counts[node] = left
        else:
            del self.home_counts[node]

    def move_home(self, old: str, new: str) -> None:
        self.version += 1
        self._uncount(old)
        self.home_counts[new] = self.home_counts.get(new, 0) + 1

    def drop_rank(self, key: str) -> None:
        self.version += 1
        entry = self.ranks.pop(key)
        self._uncount(entry.node)
        keys = self.keys_by_index[rank_index(key)]
        keys.remove(key)
        if not keys:
            del self.keys_by_index[rank_index(key)]
