"""Which owners to forget (behaviour.md "Memory": the TTL and the size bound): plain functions
of the index, the sweeper (operator/upkeep.py) forgets what they name."""
from __future__ import annotations

from homing.engine.memory.index import MemoryIndex


def expired(index: MemoryIndex, now: float, ttl: float) -> list[str]:
    """Owners with no live pods and nothing seen for `ttl` seconds."""
    return sorted(key for key, mem in index.owners.items() if now - mem.last_seen >= ttl and not index.has_live_pods(key))


def over_bound(index: MemoryIndex, max_ranks: int) -> list[str]:
    """Least recently seen owners to forget until at most `max_ranks` ranks remain."""
    excess = index.rank_count - max_ranks
    if excess <= 0:
        return []
    victims: list[str] = []
    for mem in sorted(index.owners.values(), key=lambda m: (m.last_seen, m.owner.key)):
        if excess <= 0:
            break
        if not mem.ranks:
            continue  # forgetting a pool-only owner frees no ranks
        victims.append(mem.owner.key)
        excess -= len(mem.ranks)
    return victims
