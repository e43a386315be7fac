"""What every strategy takes and returns."""
from __future__ import annotations

from dataclasses import dataclass, field

from homing.config import Weights
from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.siblings import RunsKept
from homing.engine.model import ClusterSnapshot, Rank, Term
from homing.engine.placement.beyond_home import NOTHING, BeyondHome


@dataclass(frozen=True, slots=True)
class RankContext:
    rank: Rank
    memory: OwnerMemory | None
    snapshot: ClusterSnapshot
    weights: Weights
    hostname_key: str
    max_values: int
    fault_memory: float
    now: float
    beyond: BeyondHome = NOTHING  # candidates beyond the home, empty when switched off
    runs: RunsKept | None = None  # the index's cache of sibling walks; None walks rank by rank
    siblings: tuple[tuple[str, ...], bool] | None = None  # the sibling walk when the caller did it already


@dataclass(slots=True)
class Placement:
    terms: list[Term]
    reason: str  # why the home is (or is not) preferred: home, no-memory, home-unhealthy, ...
    home: str | None = None
    domains: list[str] = field(default_factory=list)
    avoided: tuple[str, ...] = ()
    truncated: bool = False
    promise: str | None = None  # rankless: the node promised to this pod
