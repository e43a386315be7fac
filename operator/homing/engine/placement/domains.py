"""behaviour.md "Topology": the home domain of a rank's block at each level: the domain that held
most of the block's remembered ranks, ties to the domain of the lowest rank."""
from __future__ import annotations

from collections.abc import Iterator

from homing.engine.memory.entries import OwnerMemory, RankEntry, rank_index
from homing.engine.model import Rank
from homing.engine.placement.job_kinds.levels import Level


def _spec(key: str) -> str:
    return key.rsplit("/", 1)[0] if "/" in key else ""


def block_mates(mem: OwnerMemory, rank: Rank, level: Level, group: str | None) -> Iterator[tuple[int, RankEntry]]:
    """Remembered ranks of the same block (and the same task spec) as `rank`."""
    spec = _spec(rank.key)
    if level.by_group and group is not None:
        for key, entry in mem.ranks.items():
            if entry.group == group:
                yield rank_index(key), entry
    elif level.block_size:
        first = rank.index // level.block_size * level.block_size
        for index in range(first, first + level.block_size):
            for key in mem.keys_by_index.get(index, ()):
                if _spec(key) == spec:
                    yield index, mem.ranks[key]
    else:
        for key, entry in mem.ranks.items():
            if _spec(key) == spec:
                yield rank_index(key), entry


def _block_id(level: Level) -> tuple[int | None, bool]:
    return (level.block_size, level.by_group)


def home_domains(mem: OwnerMemory | None, rank: Rank, levels: tuple[Level, ...], group: str | None) -> list[str | None]:
    """The block's home domain at each level (None where no block mate is remembered).
    Levels sharing a block definition are tallied in one pass over the block."""
    if mem is None:
        return [None] * len(levels)
    tallies: dict[str, dict[str, list[int]]] = {lvl.name: {} for lvl in levels}  # value -> [count, lowest]
    seen: dict[tuple[int | None, bool], Level] = {}
    for level in levels:
        seen.setdefault(_block_id(level), level)
    for block_id, representative in seen.items():
        names = [lvl.name for lvl in levels if _block_id(lvl) == block_id]
        for index, entry in block_mates(mem, rank, representative, group):
            for level_name, value in entry.topology:
                if level_name in names:
                    slot = tallies[level_name].setdefault(value, [0, index])
                    slot[0] += 1
                    slot[1] = min(slot[1], index)
    out: list[str | None] = []
    for level in levels:
        counts = tallies[level.name]
        out.append(max(counts, key=lambda v: (counts[v][0], -counts[v][1])) if counts else None)
    return out
