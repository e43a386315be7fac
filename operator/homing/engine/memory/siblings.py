"""Other ranks' homes, nearest ranks first (block mates are the nearest ranks).

Reads the owner's derived `home_counts` and `keys_by_index`. Ranks share homes (eight
NPUs, eight ranks a node), so a walk rank by rank visits eight ranks per new home: a
memory asked twice unchanged (a gang's admissions, before any of it binds) is walked as
runs of consecutive ranks with the same homes, built once per change of the memory; right
after a change, when a bind may well follow, rank by rank."""
from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from homing.engine.memory.entries import OwnerMemory

_DENSE = 4  # walk outwards while indexes are at most this sparse; sort beyond that
# Owners whose runs are kept (the bursts in flight, not every owner ever asked): a run
# costs ~150 bytes, so runs for all of a million remembered ranks would not fit the
# memory budget. Only a cache: the homes found are the same with or without it.
KEEP_RUNS = 32


class RunsKept:
    """Which owners' memories may keep their runs: the `keep` asked last. The index owns
    one (engine/memory/index.py); without one, every walk goes rank by rank."""

    def __init__(self, keep: int = KEEP_RUNS) -> None:
        self.keep = keep
        self.owners: OrderedDict[int, OwnerMemory] = OrderedDict()

    def kept(self, mem: OwnerMemory) -> None:
        self.owners[id(mem)] = mem
        self.owners.move_to_end(id(mem))
        while len(self.owners) > self.keep:
            self.owners.popitem(last=False)[1].sibling_runs = None


@dataclass(frozen=True, slots=True)
class Runs:
    """Consecutive known rank indexes holding the same homes, merged: run r spans indexes
    lo[r]..hi[r] (known ones only) and each of them holds homes[r], in key order."""

    version: int
    lo: list[int]
    hi: list[int]
    homes: list[tuple[str, ...]]


def runs_of(mem: OwnerMemory) -> Runs:
    lo: list[int] = []
    hi: list[int] = []
    homes: list[tuple[str, ...]] = []
    for i in sorted(mem.keys_by_index):
        here = tuple(mem.ranks[k].node for k in mem.keys_by_index[i])
        if homes and homes[-1] == here:
            hi[-1] = i
        else:
            lo.append(i)
            hi.append(i)
            homes.append(here)
    return Runs(mem.version, lo, hi, homes)


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


def _homes_by_run(runs: Runs, index: int) -> Iterator[tuple[str, ...]]:
    """The same order run by run: a run is met at its end nearest `index` (lower first on
    ties), and its other indexes hold nothing new."""
    lo, hi, homes = runs.lo, runs.hi, runs.homes
    right = bisect_right(lo, index)  # runs from here start after `index`
    left = right - 1
    if left >= 0 and hi[left] >= index:  # `index` falls within this run: nearest of all
        yield homes[left]
        left -= 1
    while left >= 0 or right < len(lo):
        if right >= len(lo) or (left >= 0 and index - hi[left] <= lo[right] - index):
            yield homes[left]
            left -= 1
        else:
            yield homes[right]
            right += 1


def _runs_worth_walking(mem: OwnerMemory, cache: RunsKept | None) -> Runs | None:
    """The runs when the memory is unchanged since it was last asked (a burst of one
    owner's admissions); None right after a change, when a bind may well follow."""
    if cache is None:
        return None
    runs: Runs | None = mem.sibling_runs
    if runs is not None and runs.version == mem.version:
        return runs
    mem.sibling_runs = None  # stale: let it go now
    if mem.sibling_asked != mem.version:
        mem.sibling_asked = mem.version
        return None
    runs = mem.sibling_runs = runs_of(mem)
    cache.kept(mem)
    return runs


def sibling_homes(mem: OwnerMemory | None, index: int, own_home: str | None, limit: int,
                  cache: RunsKept | None = None) -> tuple[tuple[str, ...], bool]:
    """Homes of the other ranks (never `own_home`), at most `limit`, nearest ranks
    first; and whether the list was cut."""
    if mem is None or not mem.home_counts:
        return (), False
    others = len(mem.home_counts) - (1 if own_home in mem.home_counts else 0)
    if others <= limit:
        return tuple(sorted(n for n in mem.home_counts if n != own_home)), False
    kept: dict[str, None] = {}
    runs = _runs_worth_walking(mem, cache)
    if runs is not None:
        for homes in _homes_by_run(runs, index):
            for node in homes:
                if node != own_home:
                    kept[node] = None
                    if len(kept) == limit:
                        return tuple(sorted(kept)), True
        return tuple(sorted(kept)), True
    by_index, ranks = mem.keys_by_index, mem.ranks
    for i in _nearest(by_index, index):  # rank by rank
        for key in by_index[i]:
            node = ranks[key].node
            if node != own_home:
                kept[node] = None
                if len(kept) == limit:
                    return tuple(sorted(kept)), True
    return tuple(sorted(kept)), True
