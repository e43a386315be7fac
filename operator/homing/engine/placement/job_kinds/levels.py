"""A job's topology levels: which domain each block of ranks should share."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Level:
    """One level of a job's topology, innermost first.

    `name` is the level name in NodeState.topology ("rack", "superPod", "level1",
    "tier1"). A block is `block_size` consecutive rank indexes; None makes the whole
    job one block; `by_group` makes the block the rank's Volcano sub-group instead."""

    name: str
    block_size: int | None = None
    by_group: bool = False


@dataclass(frozen=True, slots=True)
class JobTopology:
    kind: str  # node, super-pod, rack-super-pod, multilevel, hypernode
    levels: tuple[Level, ...] = ()
    group: str | None = None  # the pod's sub-group, for by_group levels
    warnings: tuple[str, ...] = field(default_factory=tuple)


NODE = JobTopology(kind="node")


def fallback(warning: str) -> JobTopology:
    """Bad topology input: the node strategy, and the reason as a warning."""
    return JobTopology(kind="node", warnings=(warning + "; using the node strategy",))
