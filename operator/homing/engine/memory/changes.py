"""Changes to one owner's memory (behaviour.md "Memory"): a bind, a warm node, a fault. Each takes `now`
explicitly and says whether the memory changed (so the owner needs writing)."""
from __future__ import annotations

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Topology


def record_bind(
    mem: OwnerMemory,
    rank: str | None,
    node: str,
    topology: Topology,
    now: float,
    group: str | None = None,
    refresh: bool = True,
) -> bool:
    """A pod got spec.nodeName. `refresh`: a new bind, not one seen again (a resync or a
    listing), which must not move a pool entry's lastUsed nor dirty the owner."""
    mem.last_seen = max(mem.last_seen, now)
    if rank is None:
        pooled = mem.pool.get(node)
        if pooled is None:
            mem.pool[node] = PoolEntry(last_used=now, group=group)
            return True
        if pooled.group != group:  # the node now serves another group of the owner
            pooled.group, pooled.warm, pooled.last_used = group, False, max(pooled.last_used, now)
            return True
        if not refresh or pooled.last_used >= now:
            return False
        pooled.last_used = now
        return True
    entry = mem.ranks.get(rank)
    if entry is None:
        mem.ranks[rank] = RankEntry(node=node, bound_at=now, topology=topology, group=group)
        mem.link(rank, node)
    elif entry.node != node:
        mem.move_home(entry.node, node)
        entry.previous_node, entry.node = entry.node, node
        entry.bound_at, entry.topology, entry.warm, entry.group = now, topology, False, group
    else:
        if entry.topology == topology and entry.group == group:
            return False  # the same binding seen again (a resync): nothing to write
        entry.topology, entry.group = topology, group
    return True


def drop_oldest_rank(mem: OwnerMemory) -> str:
    """Over the per-owner bound: forget the rank bound longest ago (a scan, but only at the bound).
    Returns the node it was home on."""
    key = min(mem.ranks, key=lambda k: (mem.ranks[k].bound_at, k))
    node = mem.ranks[key].node
    mem.drop_rank(key)
    return node


def mark_warm(mem: OwnerMemory, rank: str | None, node: str, now: float) -> bool:
    """A container started on `node`: its image is there now."""
    mem.last_seen = max(mem.last_seen, now)
    if rank is None:
        entry = mem.pool.get(node)
        if entry is None:
            mem.pool[node] = entry = PoolEntry(last_used=now)
        if entry.warm:
            return False
        entry.warm = True
    else:
        rank_entry = mem.ranks.get(rank)
        if rank_entry is None or rank_entry.node != node or rank_entry.warm:
            return False
        rank_entry.warm = True
    return True


def record_fault(mem: OwnerMemory, rank: str, node: str, now: float, keep_for: float) -> bool:
    """The rank's pod ended on an unhealthy node: avoid that node for `keep_for` seconds."""
    entry = mem.ranks.get(rank)
    if entry is None:
        return False
    marks = [m for m in entry.faults or () if m.node != node and now - m.at < keep_for]
    marks.append(FaultMark(node=node, at=now))
    entry.faults = marks
    return True


def active_faults(entry: RankEntry | None, now: float, keep_for: float) -> list[str]:
    if entry is None or not entry.faults:
        return []
    return sorted({m.node for m in entry.faults if now - m.at < keep_for})


def drop_expired_faults(mem: OwnerMemory, now: float, keep_for: float) -> bool:
    changed = False
    for entry in mem.ranks.values():
        if entry.faults:
            kept = [m for m in entry.faults if now - m.at < keep_for]
            if len(kept) != len(entry.faults):
                entry.faults = kept or None
                changed = True
    return changed
