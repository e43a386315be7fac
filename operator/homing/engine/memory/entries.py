"""Memory entries. Slotted dataclasses, not pydantic: a large cluster keeps a million
of them, and the benchmark holds them to under 1 KB a rank. Times are epoch seconds."""
from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(slots=True)
class PoolEntry:
    last_used: float
    warm: bool = False


@dataclass(slots=True)
class Stats:
    admitted: int = 0
    home: int = 0
    domain: int = 0
    elsewhere: int = 0


@dataclass(slots=True)
class OwnerMemory:
    owner: OwnerRef
    last_seen: float
    ranks: dict[str, RankEntry] = field(default_factory=dict)
    pool: dict[str, PoolEntry] = field(default_factory=dict)
    stats: Stats = field(default_factory=Stats)
    version: int = 0  # bumped on every change; caches derived from the memory key on it
