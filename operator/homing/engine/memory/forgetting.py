"""Which owners to forget (behaviour.md "Memory": the TTL and the size bound): plain functions
of the index, the sweeper (kube/store/upkeep.py) forgets what they name."""
from __future__ import annotations

import heapq
from collections import defaultdict

from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import key_namespace


def expired(index: MemoryIndex, now: float, ttl: float) -> list[str]:
    """Owners with no live pods and nothing seen for `ttl` seconds."""
    return sorted(key for key, mem in index.owners.items() if now - mem.last_seen >= ttl and not index.has_live_pods(key))


def entries(mem: OwnerMemory) -> int:
    """What an owner costs against the bound: its ranks, its pool entries, and itself (an owner
    with neither still holds a PlacementMemory and an index entry)."""
    return 1 + len(mem.ranks) + len(mem.pool)


def over_bound(index: MemoryIndex, max_entries: int) -> list[str]:
    """Owners to forget until at most `max_entries` entries remain, in the order to forget them:
    each time the least recently seen owner of the namespace that holds the most entries then.
    Fair between namespaces: one namespace filling the memory forgets its own owners, never
    another's, until it is no bigger than they are."""
    totals: dict[str, int] = defaultdict(int)
    queues: dict[str, list[tuple[float, str, int]]] = defaultdict(list)
    for key, mem in index.owners.items():
        size, namespace = entries(mem), key_namespace(key)
        totals[namespace] += size
        queues[namespace].append((mem.last_seen, key, size))
    excess = sum(totals.values()) - max_entries
    if excess <= 0:
        return []
    for queue in queues.values():
        heapq.heapify(queue)
    largest = [(-total, namespace) for namespace, total in totals.items()]
    heapq.heapify(largest)
    victims: list[str] = []
    while excess > 0 and largest:
        _, namespace = heapq.heappop(largest)
        _, key, size = heapq.heappop(queues[namespace])
        victims.append(key)
        excess -= size
        totals[namespace] -= size
        if queues[namespace]:
            heapq.heappush(largest, (-totals[namespace], namespace))
    return victims
