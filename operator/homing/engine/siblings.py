"""Other ranks' homes, nearest ranks first (block mates are the nearest ranks).

Reads the owner's derived `home_counts` and `keys_by_index`, so a decision for a
4,096-rank owner costs at most `limit` lookups, however often the memory changes."""
from __future__ import annotations

from collections.abc import Iterator

from homing.engine.memory.entries import OwnerMemory

_DENSE = 4  # walk outwards while indexes are at most this sparse; sort beyond that


def _nearest(indexes: dict[int, list[str]], index: int) -> Iterator[int]:
    """Known rank indexes by distance from `index`, lower first on ties."""
    seen, step = 0, 0
    while seen < len(indexes) and step <= _DENSE * len(indexes):
        for i in ((index,) if step == 0 else (index - step, index + step)):
            if i in indexes:
                seen += 1
                yield i
        step += 1
    if seen < len(indexes):  # sparse indexes: the walk gave up, finish by sorting
        done = set(range(index - step + 1, index + step))
        yield from sorted((i for i in indexes if i not in done), key=lambda i: (abs(i - index), i))


def sibling_homes(mem: OwnerMemory | None, index: int, own_home: str | None, limit: int) -> tuple[tuple[str, ...], bool]:
    """Homes of the other ranks (never `own_home`), at most `limit`, nearest ranks
    first; and whether the list was cut."""
    if mem is None or not mem.home_counts:
        return (), False
    others = len(mem.home_counts) - (1 if own_home in mem.home_counts else 0)
    if others <= limit:
        return tuple(sorted(n for n in mem.home_counts if n != own_home)), False
    kept: dict[str, None] = {}
    for i in _nearest(mem.keys_by_index, index):
        for key in mem.keys_by_index[i]:
            node = mem.ranks[key].node
            if node != own_home:
                kept[node] = None
                if len(kept) == limit:
                    return tuple(sorted(kept)), True
    return tuple(sorted(kept)), True
