"""Write side: a snapshot taken on the event loop, then compact rows packed into shards
of at most STATUS_BUDGET bytes (anywhere, e.g. a worker thread)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from homing.engine.memory.entries import OwnerMemory, PoolEntry, RankEntry, Stats, Topology
from homing.engine.model import OwnerRef
from homing.placementmemory.schema import STATUS_BUDGET
from homing.placementmemory.wire import PATH_SPECIALS, escape, iso, json_wire_size, wire_len


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What encoding needs of one owner, taken on the event loop in C-speed copies. The
    entries are shared, not copied: one changed while it is encoded marks the owner
    dirty again, so a torn read is written over at the next flush."""

    owner: OwnerRef
    last_seen: float
    stats: Stats
    ranks: list[tuple[str, RankEntry]]
    pool: list[tuple[str, PoolEntry]]

    @property
    def size(self) -> int:
        return len(self.ranks) + len(self.pool)


def snapshot(mem: OwnerMemory) -> Snapshot:
    s = mem.stats
    return Snapshot(
        owner=mem.owner,
        last_seen=mem.last_seen,
        stats=Stats(admitted=s.admitted, home=s.home, domain=s.domain, elsewhere=s.elsewhere),
        ranks=list(mem.ranks.items()),
        pool=list(mem.pool.items()),
    )


def _path_line(topology: Topology) -> str:
    return " ".join(f"{escape(level, PATH_SPECIALS)}={escape(value, PATH_SPECIALS)}" for level, value in topology)


class _Table:
    """Lines of one table, each once, numbered in order of first use."""

    __slots__ = ("numbers", "lines")

    def __init__(self) -> None:
        self.numbers: dict[Any, int] = {}
        self.lines: list[str] = []

    def text(self) -> str | None:
        return "\n".join(self.lines) if self.lines else None

    def cut(self, length: int) -> None:
        while len(self.numbers) > length:
            self.numbers.popitem()  # dicts pop the last added first
        del self.lines[length:]


class _Shard:
    """One object being filled, its wire size counted as it grows."""

    def __init__(self, reserve: int, epoch: int, budget: int) -> None:
        self.epoch, self.size, self.budget = epoch, reserve, budget
        self.nodes, self.paths, self.groups = _Table(), _Table(), _Table()
        self.rank_rows: list[str] = []
        self.pool_rows: list[str] = []
        self.warm = 0

    @property
    def empty(self) -> bool:
        return not (self.rank_rows or self.pool_rows)

    def _add(self, table: _Table, key: Any, line: str) -> int:
        number = table.numbers[key] = len(table.lines)
        table.lines.append(line)
        self.size += wire_len(line) + 2  # and its "\n"
        return number

    def _node(self, name: str) -> int:
        number = self.nodes.numbers.get(name)
        return self._add(self.nodes, name, escape(name)) if number is None else number

    def _path(self, topology: Topology) -> int:
        number = self.paths.numbers.get(topology)
        return self._add(self.paths, topology, _path_line(topology)) if number is None else number

    def _group(self, name: str) -> int:
        number = self.groups.numbers.get(name)
        return self._add(self.groups, name, escape(name)) if number is None else number

    def _mark(self) -> tuple[int, int, int, int]:
        return len(self.nodes.lines), len(self.paths.lines), len(self.groups.lines), self.size

    def _keep(self, rows: list[str], line: str, mark: tuple[int, int, int, int]) -> bool:
        """Keep a row (and the table lines it named) unless the shard outgrew its budget."""
        self.size += wire_len(line) + 2
        if self.size <= self.budget:
            rows.append(line)
            return True
        self.nodes.cut(mark[0])
        self.paths.cut(mark[1])
        self.groups.cut(mark[2])
        self.size = mark[3]
        return False

    def _rank_line(self, key: str, e: RankEntry) -> str:
        fields = [f"{escape(key)}:n{self._node(e.node)}", f"b{self.epoch - int(e.bound_at)}"]
        if e.warm:
            fields.append("w")
        if e.previous_node is not None:
            fields.append(f"p{self._node(e.previous_node)}")
        if e.topology:
            fields.append(f"t{self._path(e.topology)}")
        if e.group is not None:
            fields.append(f"g{self._group(e.group)}")
        if e.faults:
            fields.extend(f"f{self._node(m.node)}@{self.epoch - int(m.at)}" for m in e.faults)
        return " ".join(fields)

    def add_rank(self, key: str, e: RankEntry) -> bool:
        mark = self._mark()  # before the row names new table lines
        if not self._keep(self.rank_rows, self._rank_line(key, e), mark):
            return False
        self.warm += e.warm
        return True

    def add_pool(self, node: str, p: PoolEntry) -> bool:
        mark = self._mark()
        fields = [f"n{self._node(node)}", f"u{self.epoch - int(p.last_used)}"]
        if p.warm:
            fields.append("w")
        if p.group is not None:
            fields.append(f"g{self._group(p.group)}")
        return self._keep(self.pool_rows, " ".join(fields), mark)

    def status(self) -> dict[str, Any]:
        return {
            "summary": {"ranks": len(self.rank_rows), "warm": self.warm, "pool": len(self.pool_rows)},
            "epoch": self.epoch,
            "nodes": self.nodes.text(),
            "paths": self.paths.text(),
            "groups": self.groups.text(),
            "rankRows": "\n".join(self.rank_rows) or None,
            "poolRows": "\n".join(self.pool_rows) or None,
        }


def _owner_status(owner: OwnerRef) -> dict[str, str]:
    return {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}


def _stats_status(s: Stats) -> dict[str, int]:
    return {"admitted": s.admitted, "home": s.home, "domain": s.domain, "elsewhere": s.elsewhere}


def _reserve(owner: OwnerRef) -> int:
    """Wire bytes of all of a status but its tables and rows, at their largest."""
    big = 10**20
    return json_wire_size({
        "owner": _owner_status(owner), "lastSeen": iso(0), "stats": _stats_status(Stats(big, big, big, big)),
        "summary": {"ranks": big, "warm": big, "pool": big}, "shard": {"index": big, "count": big}, "epoch": big,
        "nodes": "", "paths": "", "groups": "", "rankRows": "", "poolRows": "",
    })


def _place(shards: list[_Shard], fresh: Callable[[], _Shard], add: Callable[[_Shard], bool]) -> bool:
    """Into the last shard, else into a new one; False when not even an empty one holds it."""
    if add(shards[-1]):
        return True
    if shards[-1].empty:
        return False
    shard = fresh()
    if not add(shard):
        return False
    shards.append(shard)
    return True


@dataclass(slots=True)
class Encoded:
    statuses: list[dict[str, Any]]  # primary first
    dropped: list[str]  # rank keys or pool nodes larger than a whole object: never written


def encode(snap: Snapshot, budget: int = STATUS_BUDGET) -> Encoded:
    """The statuses of the owner's objects as plain dicts, each at most `budget` bytes on
    the wire: filled in order of rank key, then pool node. Pure and without pydantic, so
    that it is fast and can run in a worker thread."""
    epoch, reserve = int(snap.last_seen), _reserve(snap.owner)

    def fresh() -> _Shard:
        return _Shard(reserve, epoch, budget)

    shards, dropped = [fresh()], []
    for key, entry in sorted(snap.ranks, key=lambda kv: kv[0]):
        if not _place(shards, fresh, lambda s: s.add_rank(key, entry)):  # noqa: B023 (called in this turn)
            dropped.append(key)
    for node, pool_entry in sorted(snap.pool, key=lambda kv: kv[0]):
        if not _place(shards, fresh, lambda s: s.add_pool(node, pool_entry)):  # noqa: B023 (called in this turn)
            dropped.append(node)
    owner, seen, count = _owner_status(snap.owner), iso(snap.last_seen), len(shards)
    statuses = [
        {"owner": owner, "lastSeen": seen, "shard": {"index": number, "count": count}, **shard.status()}
        for number, shard in enumerate(shards, 1)
    ]
    statuses[0]["stats"] = _stats_status(snap.stats)
    return Encoded(statuses, dropped)
