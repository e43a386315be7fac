"""An owner's explanation: where each rank goes back to, the nodes it avoids and its home
rate, from its PlacementMemory objects (decoded and merged as the operator's loader
does: compact rows, shards). Pure."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pydantic

from homing.engine.memory.entries import OwnerMemory
from homing.placementmemory import Fragment, NameMismatch, NotWritten, belonging, merge, read_object


class NoMemory(Exception):
    """No PlacementMemory names this owner."""


@dataclass
class Fault:
    node: str
    at: str
    avoided: bool  # still inside the fault memory: the replacement keeps away from it


@dataclass
class RankHome:
    rank: str
    node: str
    previous_node: str | None
    warm: bool
    bound_at: str
    topology: dict[str, str]
    group: str | None
    faults: list[Fault]


@dataclass
class PoolHome:
    node: str
    last_used: str
    warm: bool


@dataclass
class OwnerExplanation:
    owner: str
    namespace: str
    uid: str
    objects: list[str]
    last_seen: str
    ranks: list[RankHome]
    pool: list[PoolHome]
    fault_nodes: dict[str, list[str]]  # node -> ranks that avoid it now
    stats: dict[str, int]
    home_rate: float | None  # home / placements compared; None before any
    unreadable: list[str] = field(default_factory=list)
    earlier_owners: list[str] = field(default_factory=list)  # UIDs of owners once of this name


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rank_order(key: str) -> tuple[tuple[int, int, str], ...]:
    """worker/10 after worker/9: numbers compared as numbers."""
    return tuple((0, int(p), "") if p.isascii() and p.isdigit() else (1, 0, p) for p in key.split("/"))


def home_rate(stats: dict[str, int]) -> float | None:
    placed = stats["home"] + stats["domain"] + stats["elsewhere"]
    return stats["home"] / placed if placed else None


def _matches(fragment: Fragment, kind: str, name: str) -> bool:
    return fragment.owner.kind.lower() == kind.lower() and fragment.owner.name == name


def read_all(items: list[dict[str, Any]]) -> tuple[list[Fragment], list[str]]:
    """Every readable object, and a line for each that is not (skipped, as the loader does)."""
    fragments, unreadable = [], []
    for item in items:
        try:
            fragments.append(read_object(item))
        except NotWritten:  # created, its status not yet written: nothing to show or warn about
            continue
        except (pydantic.ValidationError, NameMismatch, ValueError, IndexError) as err:
            name = (item.get("metadata") or {}).get("name")
            unreadable.append(f"{name}: {str(err).splitlines()[0][:200]}")
    return fragments, unreadable


def _ranks(mem: OwnerMemory, now: float, fault_memory: float) -> list[RankHome]:
    out = []
    for key in sorted(mem.ranks, key=rank_order):
        e = mem.ranks[key]
        faults = [Fault(f.node, iso(f.at), now - f.at < fault_memory) for f in e.faults or ()]
        out.append(RankHome(key, e.node, e.previous_node, e.warm, iso(e.bound_at), dict(e.topology), e.group, faults))
    return out


def explain_owner(items: list[dict[str, Any]], kind: str, name: str, now: float, fault_memory: float) -> OwnerExplanation:
    """`items`: the PlacementMemory objects of the owner's namespace."""
    fragments, unreadable = read_all(items)
    by_uid: dict[str, list[Fragment]] = {}
    for f in fragments:
        if _matches(f, kind, name):
            by_uid.setdefault(f.owner.uid, []).append(f)
    usable = {uid: parts for uid, parts in by_uid.items() if any(p.index == 1 for p in parts)}
    if not usable:
        raise NoMemory(f"no PlacementMemory remembers {kind}/{name}" + (" (only shards without their primary)" if by_uid else ""))
    # An owner deleted and created again under the same name: the newest memory is the live one.
    uid = max(usable, key=lambda u: max(p.last_seen for p in usable[u]))
    mem = merge(usable[uid])
    ranks = _ranks(mem, now, fault_memory)
    fault_nodes: dict[str, list[str]] = {}
    for r in ranks:
        for fault in r.faults:
            if fault.avoided:
                fault_nodes.setdefault(fault.node, []).append(r.rank)
    s = mem.stats
    stats = {"admitted": s.admitted, "home": s.home, "domain": s.domain, "elsewhere": s.elsewhere}
    pool = [PoolHome(n, iso(p.last_used), p.warm) for n, p in sorted(mem.pool.items(), key=lambda kv: -kv[1].last_used)]
    return OwnerExplanation(
        owner=f"{mem.owner.kind}/{mem.owner.name}",
        namespace=mem.owner.namespace,
        uid=uid,
        objects=sorted(p.name for p in belonging(usable[uid])),
        last_seen=iso(mem.last_seen),
        ranks=ranks,
        pool=pool,
        fault_nodes=fault_nodes,
        stats=stats,
        home_rate=home_rate(stats),
        unreadable=unreadable,
        earlier_owners=sorted(u for u in by_uid if u != uid),
    )


@dataclass
class OwnerSummary:
    """One line of `homing owners`: an owner homing remembers."""

    namespace: str
    owner: str  # Kind/name
    uid: str
    ranks: int
    pool: int
    stats: dict[str, int]
    home_rate: float | None
    last_seen: str
    objects: list[str]


@dataclass
class OwnerList:
    owners: list[OwnerSummary]
    unreadable: list[str] = field(default_factory=list)


def list_owners(items: list[dict[str, Any]]) -> OwnerList:
    """Every owner the PlacementMemory objects `items` remember (any namespaces), by namespace
    and name; shards without their primary are skipped, as the loader skips them."""
    fragments, unreadable = read_all(items)
    by_owner: dict[tuple[str, str], list[Fragment]] = {}
    for f in fragments:
        by_owner.setdefault((f.owner.namespace, f.owner.uid), []).append(f)
    owners = []
    for (namespace, uid), parts in by_owner.items():
        if not any(p.index == 1 for p in parts):
            continue
        mem = merge(parts)
        s = mem.stats
        stats = {"admitted": s.admitted, "home": s.home, "domain": s.domain, "elsewhere": s.elsewhere}
        owners.append(OwnerSummary(namespace, f"{mem.owner.kind}/{mem.owner.name}", uid, len(mem.ranks), len(mem.pool),
                                   stats, home_rate(stats), iso(mem.last_seen), sorted(p.name for p in belonging(parts))))
    owners.sort(key=lambda o: (o.namespace, o.owner.lower(), o.last_seen))
    return OwnerList(owners, unreadable)
