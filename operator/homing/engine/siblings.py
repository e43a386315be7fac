"""Other ranks' homes, nearest ranks first, derived once per memory version.

A 4,096-rank owner must not cost a 4,096-entry scan per admission: the sorted view
is cached on (owner uid, memory version) and a rank takes a window around itself."""
from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass

from homing.engine.memory.entries import OwnerMemory


@dataclass(frozen=True, slots=True)
class HomesView:
    indexes: tuple[int, ...]  # rank index of each remembered rank, ascending
    nodes: tuple[str, ...]  # the home of each, same order
    distinct: tuple[str, ...]  # every home once, sorted


def _rank_index(key: str) -> int:
    tail = key.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class _ViewCache:
    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._views: OrderedDict[str, tuple[int, HomesView]] = OrderedDict()

    def view(self, mem: OwnerMemory) -> HomesView:
        uid = mem.owner.uid
        hit = self._views.get(uid)
        if hit is not None and hit[0] == mem.version:
            self._views.move_to_end(uid)
            return hit[1]
        ordered = sorted((_rank_index(k), k, e.node) for k, e in mem.ranks.items())
        view = HomesView(
            indexes=tuple(i for i, _, _ in ordered),
            nodes=tuple(n for _, _, n in ordered),
            distinct=tuple(sorted({n for _, _, n in ordered})),
        )
        self._views[uid] = (mem.version, view)
        if len(self._views) > self._size:
            self._views.popitem(last=False)
        return view


_cache = _ViewCache()


def sibling_homes(mem: OwnerMemory | None, index: int, own_home: str | None, limit: int) -> tuple[tuple[str, ...], bool]:
    """Homes of the other ranks (never `own_home`), at most `limit`, nearest ranks first;
    and whether the list was cut."""
    if mem is None or not mem.ranks:
        return (), False
    view = _cache.view(mem)
    others = len(view.distinct) - (1 if own_home is not None and own_home in view.distinct else 0)
    if others <= limit:
        return tuple(n for n in view.distinct if n != own_home), False
    # Walk outwards from the rank's own position: nearest ranks are its block mates.
    kept: set[str] = set()
    left = bisect.bisect_left(view.indexes, index) - 1
    right = left + 1
    while len(kept) < limit and (left >= 0 or right < len(view.nodes)):
        take_right = right < len(view.nodes) and (
            left < 0 or view.indexes[right] - index <= index - view.indexes[left]
        )
        if take_right:
            node, right = view.nodes[right], right + 1
        else:
            node, left = view.nodes[left], left - 1
        if node != own_home:
            kept.add(node)
    return tuple(sorted(kept)), True
