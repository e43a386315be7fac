"""Read side: an object (compact or the earlier list form) back to memory, shards merged."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats, Topology
from homing.engine.model import OwnerRef
from homing.placementmemory.names import shard_name
from homing.placementmemory.schema import (
    FaultNodeStatus,
    OwnerStatus,
    PlacementMemoryStatus,
    PoolStatus,
    RankStatus,
    StatsStatus,
    SummaryStatus,
)
from homing.placementmemory.wire import unescape


class NotWritten(ValueError):
    """An object created and not yet given its status: the writer creates, then writes the
    status subresource, and a reader can list it in between (or after a writer died there)."""


class NameMismatch(ValueError):
    """An object whose name is not the one its owner and shard number give."""


@dataclass(slots=True)
class Fragment:
    """One object's part of an owner's memory."""

    name: str
    owner: OwnerRef
    index: int
    count: int
    last_seen: float
    stats: Stats | None
    ranks: dict[str, RankEntry]
    pool: dict[str, PoolEntry]


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def check_rank_key(key: str) -> str:
    """Homing writes `<index>` or `<name>/<index>`, the index in ASCII digits (`"²".isdigit()`)."""
    tail = key.rsplit("/", 1)[-1]
    if not (tail.isascii() and tail.isdigit()):
        raise ValueError(f"rank {key[:80]!r} is not <index> or <name>/<index>")
    return key


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.split("\n")


def _number(text: str) -> int:
    """A line number: ASCII digits only (int() also takes "٣", "1_0" and " 1")."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"not a number: {text[:20]!r}")
    return int(text)


def _seconds(text: str) -> int:
    return -_number(text[1:]) if text.startswith("-") else _number(text)


def _path(line: str) -> Topology:
    pairs = (part.split("=", 1) for part in line.split(" ") if part)
    return tuple((unescape(level), unescape(value)) for level, value in pairs)


# _rank and _pool read alike but stay two: start-up reads every row of every owner through them,
# and one shared tag reader building a dict a row read 1.1-1.3x slower (bench/decode_rows.py).
def _rank(line: str, epoch: int, nodes: list[str], paths: list[Topology], groups: list[str]) -> tuple[str, RankEntry]:
    head, colon, fields = line.rpartition(":")
    if not colon:
        raise ValueError(f"rank row without a rank: {line[:80]!r}")
    node = bound_at = previous = group = None
    topology: Topology = ()
    warm, faults = False, []
    for field in fields.split(" "):
        tag, value = field[:1], field[1:]
        if tag == "n":
            node = nodes[_number(value)]
        elif tag == "b":
            bound_at = float(epoch - _seconds(value))
        elif tag == "w":
            warm = True
        elif tag == "p":
            previous = nodes[_number(value)]
        elif tag == "t":
            topology = paths[_number(value)]
        elif tag == "g":
            group = groups[_number(value)]
        elif tag == "f":
            number, _, age = value.partition("@")
            faults.append(FaultMark(node=nodes[_number(number)], at=float(epoch - _seconds(age))))
        # any other tag is a later version's: ignored, so that a downgrade still reads
    if node is None or bound_at is None:
        raise ValueError(f"rank row without node or bind time: {line[:80]!r}")
    entry = RankEntry(node=node, bound_at=bound_at, topology=topology, previous_node=previous, warm=warm,
                      faults=faults or None, group=group)
    return check_rank_key(unescape(head)), entry


def _pool(line: str, epoch: int, nodes: list[str], groups: list[str]) -> tuple[str, PoolEntry]:
    node, last_used, warm, group = None, None, False, None
    for field in line.split(" "):
        tag, value = field[:1], field[1:]
        if tag == "n":
            node = nodes[_number(value)]
        elif tag == "u":
            last_used = float(epoch - _seconds(value))
        elif tag == "w":
            warm = True
        elif tag == "g":
            group = groups[_number(value)]
    if node is None or last_used is None:
        raise ValueError(f"pool row without node or last use: {line[:80]!r}")
    return node, PoolEntry(last_used=last_used, warm=warm, group=group)


def _compact(status: PlacementMemoryStatus) -> tuple[dict[str, RankEntry], dict[str, PoolEntry]]:
    epoch = status.epoch or 0
    nodes = [unescape(line) for line in _lines(status.nodes)]
    paths = [_path(line) for line in _lines(status.paths)]
    groups = [unescape(line) for line in _lines(status.groups)]
    ranks = dict(_rank(line, epoch, nodes, paths, groups) for line in _lines(status.rank_rows))
    pool = dict(_pool(line, epoch, nodes, groups) for line in _lines(status.pool_rows))
    return ranks, pool


def _legacy(status: PlacementMemoryStatus) -> tuple[dict[str, RankEntry], dict[str, PoolEntry]]:
    ranks = {
        check_rank_key(r.rank): RankEntry(
            node=r.node,
            bound_at=_epoch(r.bound_at),
            topology=tuple(r.topology.items()),
            previous_node=r.previous_node,
            warm=r.warm,
            faults=[FaultMark(node=f.node, at=_epoch(f.at)) for f in r.fault_nodes] or None,
            group=r.group,
        )
        for r in status.ranks
    }
    pool = {p.node: PoolEntry(last_used=_epoch(p.last_used), warm=p.warm) for p in status.pool}
    return ranks, pool


def decode(status: PlacementMemoryStatus, namespace: str, name: str = "") -> Fragment:
    """One object's part of its owner's memory, compact or in the earlier form."""
    o = status.owner
    owner = OwnerRef(api_version=o.api_version, kind=o.kind, name=o.name, namespace=namespace, uid=o.uid)
    ranks, pool = _compact(status) if status.epoch is not None else _legacy(status)
    s = status.stats
    return Fragment(
        name=name,
        owner=owner,
        index=status.shard.index,
        count=status.shard.count,
        last_seen=_epoch(status.last_seen),
        stats=Stats(admitted=s.admitted, home=s.home, domain=s.domain, elsewhere=s.elsewhere),
        ranks=ranks,
        pool=pool,
    )


def read_object(item: Mapping[str, Any]) -> Fragment:
    """Validate and decode one listed object; raises on anything it cannot read."""
    meta = item.get("metadata") or {}
    if not item.get("status"):
        raise NotWritten(f"{meta.get('name')!r} has no status yet")
    status = PlacementMemoryStatus.model_validate(item["status"])
    fragment = decode(status, meta.get("namespace") or "", meta.get("name") or "")
    if shard_name(fragment.owner, fragment.index) != fragment.name:
        raise NameMismatch(f"{fragment.name!r} is not the name of shard {fragment.index} of its owner")
    return fragment


def belonging(fragments: list[Fragment]) -> list[Fragment]:
    """The objects that make one owner's memory: the primary and the shards its count names
    (one numbered higher is left from a write that stopped before deleting it)."""
    primary = next((f for f in fragments if f.index == 1), None)
    if primary is None:
        raise ValueError("shards without their primary object")
    return [f for f in fragments if f.index <= primary.count]


def merge(fragments: list[Fragment]) -> OwnerMemory:
    """One owner's memory from its objects; a rank found twice keeps the copy from the
    object seen last."""
    parts = sorted(belonging(fragments), key=lambda f: (f.last_seen, -f.index))
    primary = next(f for f in parts if f.index == 1)
    ranks: dict[str, RankEntry] = {}
    pool: dict[str, PoolEntry] = {}
    for part in parts:
        ranks.update(part.ranks)
        pool.update(part.pool)
    return OwnerMemory(
        owner=primary.owner,
        last_seen=max(f.last_seen for f in parts),
        ranks=ranks,
        pool=pool,
        stats=primary.stats or Stats(),
    )


def from_status(status: PlacementMemoryStatus, namespace: str) -> OwnerMemory:
    """The memory in one object (an owner small enough for one, or a legacy object)."""
    part = decode(status, namespace)
    return OwnerMemory(owner=part.owner, last_seen=part.last_seen, ranks=part.ranks, pool=part.pool,
                       stats=part.stats or Stats())


# -- the earlier form: what the loader still reads (and the benchmark's baseline) ---------------

def _ts(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC).replace(microsecond=0)


def legacy_status(mem: OwnerMemory) -> PlacementMemoryStatus:
    """The status as homing wrote it before the compact form: one object, a rank a map."""
    o = mem.owner
    ranks = [
        RankStatus(
            rank=key,
            node=e.node,
            previous_node=e.previous_node,
            topology=dict(e.topology),
            bound_at=_ts(e.bound_at),
            warm=e.warm,
            fault_nodes=[FaultNodeStatus(node=m.node, at=_ts(m.at)) for m in e.faults or ()],
            group=e.group,
        )
        for key, e in sorted(mem.ranks.items())
    ]
    pool = [PoolStatus(node=n, last_used=_ts(p.last_used), warm=p.warm) for n, p in sorted(mem.pool.items())]
    s = mem.stats
    return PlacementMemoryStatus(
        owner=OwnerStatus(api_version=o.api_version, kind=o.kind, name=o.name, uid=o.uid),
        ranks=ranks,
        pool=pool,
        last_seen=_ts(mem.last_seen),
        stats=StatsStatus(admitted=s.admitted, home=s.home, domain=s.domain, elsewhere=s.elsewhere),
        summary=SummaryStatus(ranks=len(ranks), warm=sum(1 for r in ranks if r.warm), pool=len(pool)),
    )
