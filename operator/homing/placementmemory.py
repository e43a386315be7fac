"""The durable form of one owner's memory: the PlacementMemory custom resource (SPEC 2.1).

The pydantic model below is the schema; crds/placementmemory.yaml is generated from
it (`make crds`) and a test keeps the two in sync. Conversions are pure.

Compact form. An object holds tables (node names, topology paths, sub-groups), one
per line, and one short line per rank or pool entry that names table entries by
number and times as seconds before `epoch`:

    rankRows:  <rank>:n<node> b<age> [w] [p<node>] [t<path>] [g<group>] [f<node>@<age>]...
    poolRows:  n<node> u<age> [w]

`w` is warm, `p` the previous node, `f` a fault mark. A large owner is split over
several objects (shards `<name>`, `<name>-2`, ...), each self-contained and packed to
at most STATUS_BUDGET bytes on the wire, so no object nears etcd's limit whatever the
owner's size or its node names' length. The first object (the primary) carries the
stats and the shard count, and is written last. The form before it (a list of rank
objects in `ranks`, `pool`) is still read."""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats, Topology
from homing.engine.model import OwnerRef

GROUP = "homing.io"
VERSION = "v1alpha1"
KIND = "PlacementMemory"
PLURAL = "placementmemories"
API_VERSION = f"{GROUP}/{VERSION}"

MIB = 1024 * 1024
# One object's status on the wire, at most, by construction: with the metadata homing
# writes (under 2 KiB) an object stays far under 1 MiB (etcd refuses 1.5 MiB), and the
# client's JSON work for one request holds the event loop about a millisecond.
STATUS_BUDGET = 256 * 1024


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class OwnerStatus(_Camel):
    api_version: str
    kind: str
    name: str
    uid: str


class FaultNodeStatus(_Camel):
    node: str
    at: datetime


class RankStatus(_Camel):
    rank: str
    node: str
    previous_node: str | None = None
    topology: dict[str, str] = Field(default_factory=dict)
    bound_at: datetime
    warm: bool = False
    fault_nodes: list[FaultNodeStatus] = Field(default_factory=list)
    group: str | None = None


class PoolStatus(_Camel):
    node: str
    last_used: datetime
    warm: bool = False


class StatsStatus(_Camel):
    admitted: int = Field(default=0, ge=0)
    home: int = Field(default=0, ge=0)
    domain: int = Field(default=0, ge=0)
    elsewhere: int = Field(default=0, ge=0)


class SummaryStatus(_Camel):
    ranks: int = Field(default=0, ge=0)
    warm: int = Field(default=0, ge=0)
    pool: int = Field(default=0, ge=0)


class ShardStatus(_Camel):
    index: int = Field(default=1, ge=1, description="This object's place among the owner's objects: 1 is the primary.")
    count: int = Field(default=1, ge=1, description="How many objects the owner had when this one was written.")


class PlacementMemoryStatus(_Camel):
    owner: OwnerStatus
    ranks: list[RankStatus] = Field(default_factory=list, description="The earlier form: read, no longer written.")
    pool: list[PoolStatus] = Field(default_factory=list, description="The earlier form: read, no longer written.")
    last_seen: datetime
    stats: StatsStatus = Field(default_factory=StatsStatus)
    summary: SummaryStatus = Field(default_factory=SummaryStatus, description="What this object holds.")
    shard: ShardStatus = Field(default_factory=ShardStatus)
    epoch: int | None = Field(default=None, description="Unix seconds the ages in the rows count back from.")
    nodes: str | None = Field(default=None, description="Node names, one a line; rows name line numbers (from 0).")
    paths: str | None = Field(default=None, description="Topology paths, one a line: level=value ..., innermost first.")
    groups: str | None = Field(default=None, description="Sub-groups (Volcano), one a line.")
    rank_rows: str | None = Field(
        default=None,
        description="One line a rank: <rank>:n<node> b<age> [w] [p<node>] [t<path>] [g<group>] [f<node>@<age>]...",
    )
    pool_rows: str | None = Field(default=None, description="One line a pool home: n<node> u<age> [w].")


# -- names ------------------------------------------------------------------------------------

def resource_name(owner: OwnerRef) -> str:
    """`<kind>-<name>-<uid prefix>`: readable, and unique when two owners share a name."""
    base = re.sub(r"[^a-z0-9.-]", "-", f"{owner.kind.lower()}-{owner.name.lower()}")[:240].strip("-.")
    digest = hashlib.sha256(owner.uid.encode()).hexdigest()[:6]
    return f"{base}-{digest}"


def shard_name(owner: OwnerRef, number: int) -> str:
    """The primary keeps the owner's name, shard n is `<name>-n`: no primary looks like a
    shard, it ends in a dash and six hex digits where a shard has a dash and fewer digits."""
    name = resource_name(owner)
    return name if number == 1 else f"{name}-{number}"


def resource_body(owner: OwnerRef, number: int = 1) -> dict[str, Any]:
    """A new PlacementMemory, owned by the workload so that garbage collection takes it along."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": shard_name(owner, number),
            "namespace": owner.namespace,
            "labels": {"app.kubernetes.io/managed-by": "homing"},
            "ownerReferences": [
                {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}
            ],
        },
        "spec": {},
    }


def primary_owner_key(body: Mapping[str, Any]) -> str | None:
    """The owner key a (deleted) object stands for; None for a shard beyond the first,
    which homing deletes itself when an owner's memory shrinks."""
    status = body.get("status") or {}
    uid = (status.get("owner") or {}).get("uid")
    namespace = (body.get("metadata") or {}).get("namespace")
    if not uid or not namespace or ((status.get("shard") or {}).get("index") or 1) != 1:
        return None
    return f"{namespace}/{uid}"


# -- wire sizes and escapes ---------------------------------------------------------------------

_PLAIN = re.compile(r"[ !#-%'-;=?-\[\]-~]*")  # printable ASCII that JSON (Go's too) copies as is
_ROW_SPECIALS = re.compile("[%\n]")  # "%" escapes, "\n" ends a line
_PATH_SPECIALS = re.compile("[% =\n]")  # and " " "=" separate levels and values


def json_wire_size(value: Any) -> int:
    """Bytes of `value` as JSON on the wire, or more: Python's ASCII JSON is never shorter
    than the API server's, but for < > & (Go writes \\u003c) and \\b \\f (\\u0008)."""
    text = json.dumps(value, separators=(",", ":"))
    return len(text) + 5 * sum(text.count(c) for c in "<>&") + 4 * (text.count("\\b") + text.count("\\f"))


def wire_len(text: str) -> int:
    """Bytes of `text` inside a JSON string on the wire, or more."""
    return len(text) if _PLAIN.fullmatch(text) else json_wire_size(text) - 2


def _escape(text: str, specials: re.Pattern[str] = _ROW_SPECIALS) -> str:
    """Percent-escape the characters that would split a line or a field."""
    return specials.sub(lambda m: f"%{ord(m.group()):02X}", text) if specials.search(text) else text


def _unescape(text: str) -> str:
    return unquote(text) if "%" in text else text


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


# -- write side: snapshot on the loop, encode anywhere ---------------------------------------

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
    return " ".join(f"{_escape(level, _PATH_SPECIALS)}={_escape(value, _PATH_SPECIALS)}" for level, value in topology)


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
        return self._add(self.nodes, name, _escape(name)) if number is None else number

    def _path(self, topology: Topology) -> int:
        number = self.paths.numbers.get(topology)
        return self._add(self.paths, topology, _path_line(topology)) if number is None else number

    def _group(self, name: str) -> int:
        number = self.groups.numbers.get(name)
        return self._add(self.groups, name, _escape(name)) if number is None else number

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
        fields = [f"{_escape(key)}:n{self._node(e.node)}", f"b{self.epoch - int(e.bound_at)}"]
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
        line = f"n{self._node(node)} u{self.epoch - int(p.last_used)}"
        return self._keep(self.pool_rows, f"{line} w" if p.warm else line, mark)

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
        "owner": _owner_status(owner), "lastSeen": _iso(0), "stats": _stats_status(Stats(big, big, big, big)),
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
        if not _place(shards, fresh, lambda s: s.add_rank(key, entry)):
            dropped.append(key)
    for node, pool_entry in sorted(snap.pool, key=lambda kv: kv[0]):
        if not _place(shards, fresh, lambda s: s.add_pool(node, pool_entry)):
            dropped.append(node)
    owner, seen, count = _owner_status(snap.owner), _iso(snap.last_seen), len(shards)
    statuses = [
        {"owner": owner, "lastSeen": seen, "shard": {"index": number, "count": count}, **shard.status()}
        for number, shard in enumerate(shards, 1)
    ]
    statuses[0]["stats"] = _stats_status(snap.stats)
    return Encoded(statuses, dropped)


# -- read side ----------------------------------------------------------------------------------

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
        moment = moment.replace(tzinfo=timezone.utc)
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
    return tuple((_unescape(level), _unescape(value)) for level, value in pairs)


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
    return check_rank_key(_unescape(head)), entry


def _pool(line: str, epoch: int, nodes: list[str]) -> tuple[str, PoolEntry]:
    node, last_used, warm = None, None, False
    for field in line.split(" "):
        tag, value = field[:1], field[1:]
        if tag == "n":
            node = nodes[_number(value)]
        elif tag == "u":
            last_used = float(epoch - _seconds(value))
        elif tag == "w":
            warm = True
    if node is None or last_used is None:
        raise ValueError(f"pool row without node or last use: {line[:80]!r}")
    return node, PoolEntry(last_used=last_used, warm=warm)


def _compact(status: PlacementMemoryStatus) -> tuple[dict[str, RankEntry], dict[str, PoolEntry]]:
    epoch = status.epoch or 0
    nodes = [_unescape(line) for line in _lines(status.nodes)]
    paths = [_path(line) for line in _lines(status.paths)]
    groups = [_unescape(line) for line in _lines(status.groups)]
    ranks = dict(_rank(line, epoch, nodes, paths, groups) for line in _lines(status.rank_rows))
    pool = dict(_pool(line, epoch, nodes) for line in _lines(status.pool_rows))
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
    status = PlacementMemoryStatus.model_validate(item.get("status") or {})
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
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(microsecond=0)


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


# -- CRD generation -------------------------------------------------------------------

def _structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Pydantic JSON schema -> Kubernetes structural schema: inline $refs, turn
    Optional into nullable, drop titles."""
    if "$ref" in schema:
        return _structural(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        out = _structural(options[0], defs)
        if len(options) < len(schema["anyOf"]):
            out["nullable"] = True
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        if key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        else:
            out[key] = value
    return out


def status_schema() -> dict[str, Any]:
    raw = PlacementMemoryStatus.model_json_schema(by_alias=True)
    return _structural(raw, raw.get("$defs", {}))


def crd() -> dict[str, Any]:
    def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
        col = {"name": name, "type": kind, "jsonPath": path}
        if priority:
            col["priority"] = priority
        return col

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "plural": PLURAL,
                "singular": "placementmemory",
                "shortNames": ["pmem"],
                "listKind": f"{KIND}List",
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        column("Owner-Kind", ".status.owner.kind"),
                        column("Owner", ".status.owner.name"),
                        column("Ranks", ".status.summary.ranks", "integer"),
                        column("Warm", ".status.summary.warm", "integer"),
                        column("Pool", ".status.summary.pool", "integer", priority=1),
                        column("Shard", ".status.shard.index", "integer", priority=1),
                        column("Hits", ".status.stats.home", "integer"),
                        column("Misses", ".status.stats.elsewhere", "integer"),
                        column("Last-Seen", ".status.lastSeen", "date"),
                        column("Age", ".metadata.creationTimestamp", "date"),
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "Where each rank of one workload ran; written by homing.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "description": "Unused; the memory is status."},
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }
