"""Rankless replicas: promise each new pod a different free home of the owner's pool."""
from __future__ import annotations

from homing.engine.memory.entries import OwnerMemory
from homing.engine.model import ClusterSnapshot, Health
from homing.engine.rules.bounded import bounded
from homing.engine.rules.pool import other_homes_term, promised_home_term
from homing.engine.rules.term import kept
from homing.engine.strategies.base import Placement


def free_homes(mem: OwnerMemory, snapshot: ClusterSnapshot, taken: set[str]) -> list[str]:
    """Healthy pool nodes nobody holds, warm first, then most recently used."""
    candidates = [
        (not entry.warm, -entry.last_used, node)
        for node, entry in mem.pool.items()
        if node not in taken and snapshot.health(node) is Health.HEALTHY
    ]
    return [node for _, _, node in sorted(candidates)]


def pool_strategy(
    mem: OwnerMemory | None,
    snapshot: ClusterSnapshot,
    taken: set[str],
    home_weight: int,
    other_weight: int,
    hostname_key: str,
    max_values: int,
) -> Placement:
    """`taken`: nodes occupied by a live pod of the owner or promised to a pending one."""
    if mem is None or not mem.pool:
        return Placement(terms=[], reason="no-memory")
    free = free_homes(mem, snapshot, taken)
    if not free:
        return Placement(terms=[], reason="pool-exhausted")
    promised, rest = free[0], free[1:]
    others, cut = bounded(rest, max_values)
    terms = kept(
        (
            promised_home_term(promised, home_weight, hostname_key),
            other_homes_term(others, other_weight, hostname_key),
        )
    )
    return Placement(terms=terms, reason="pool", home=promised, truncated=cut, promise=promised)
