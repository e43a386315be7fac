"""Volcano HyperNodes (topology.volcano.sh/v1alpha1) as topology levels `tier1..tierN`.

A HyperNode's members are Nodes (tier 1, usually) or HyperNodes, matched by exact
name, regex or label selector. A node's path holds, for each tier, the HyperNode that
contains it. A domain becomes a term by its members' label when they are all selected
by one label key, otherwise by the hostnames of its nodes.

The pieces, each a pure function of its inputs:
- parse(): one HyperNode object -> a HyperNode with compiled members (hypernode_members.py),
  or a warning;
- hierarchy(): the HyperNodes and which HyperNodes each one holds -> for each HyperNode
  the HyperNodes whose own nodes it contains (`below`), its domain expression, cycles;
- node_path(): the HyperNodes that contain a node -> its path and any conflict.
hypernode_topology() puts them together from scratch over every node; HyperNodeIndex
(hypernode_index.py) keeps the same result up to date one change at a time."""
from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from homing.engine.cluster.topology.hypernode_members import Member, member
from homing.engine.model import DomainExpr, Path

NODE_MEMBER = "Node"  # a member's `type` when absent; any other type names HyperNodes
NO_LABELS: Mapping[str, str] = MappingProxyType({})  # HyperNode members are matched by name only


@dataclass(slots=True)
class HyperNodeTopology:
    paths: dict[str, Path] = field(default_factory=dict)  # node -> (("tier1", hn), ...)
    selectors: dict[tuple[str, str], DomainExpr] = field(default_factory=dict)
    max_tier: int = 0
    warnings: list[str] = field(default_factory=list)


def level(tier: int) -> str:
    return f"tier{tier}"


# -- HyperNodes ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HyperNode:
    name: str
    tier: int
    node_members: tuple[Member, ...]  # members of type Node: they select nodes
    group_members: tuple[Member, ...]  # members of any other type: they select HyperNodes by name

    def holds_node(self, node: str, labels: Mapping[str, str]) -> bool:
        return any(m.selects(node, labels) for m in self.node_members)

    def group_matches(self, names: Collection[str]) -> list[list[str]]:
        """For each HyperNode-type member, the other HyperNodes it selects, sorted."""
        ordered = sorted(names)
        return [([m.exact] if m.exact in names and m.exact != self.name else []) if m.exact is not None
                else [n for n in ordered if n != self.name and m.selects(n, NO_LABELS)]
                for m in self.group_members]


def hypernode_name(raw: object) -> str:
    """The name a HyperNode object is kept under ("" when it has none)."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def parse(raw: object) -> tuple[HyperNode | None, str | None]:
    """(HyperNode, None), or (None, the warning) when it cannot be used."""
    name = hypernode_name(raw)
    spec = raw.get("spec") if isinstance(raw, Mapping) else None
    spec = spec if isinstance(spec, Mapping) else {}
    tier = spec.get("tier")
    if not name or not isinstance(tier, int) or isinstance(tier, bool) or tier < 1:
        return None, f"HyperNode {name!r} ignored: spec.tier must be a positive integer"
    members = spec.get("members")
    members = [m for m in members if isinstance(m, Mapping)] if isinstance(members, list) else []
    node_members = tuple(member(m) for m in members if m.get("type", NODE_MEMBER) == NODE_MEMBER)
    group_members = tuple(member(m) for m in members if m.get("type", NODE_MEMBER) != NODE_MEMBER)
    return HyperNode(name, tier, node_members, group_members), None


# -- the hierarchy -------------------------------------------------------------------------------

@dataclass(slots=True)
class Hierarchy:
    below: dict[str, frozenset[str]]  # HyperNode -> the HyperNodes whose own nodes it contains (itself too)
    exprs: dict[str, DomainExpr | None]  # HyperNode -> its domain as one label selector, when it is one
    warnings: list[str]  # cycles


def selectors(hypernodes: Mapping[str, HyperNode], exprs: Mapping[str, DomainExpr | None]) -> dict[tuple[str, str], DomainExpr]:
    """(level, HyperNode) -> its label selector, for the HyperNodes that have one."""
    return {(level(hypernodes[n].tier), n): e for n, e in exprs.items() if e is not None}


def combined(parts: Sequence[DomainExpr | None]) -> DomainExpr | None:
    """One `key In values` for all parts, when every part is one and they share the key."""
    present = [p for p in parts if p is not None]
    if not parts or len(present) != len(parts) or len({p.key for p in present}) != 1:
        return None
    return DomainExpr(present[0].key, tuple(sorted({v for p in present for v in p.values})))


@dataclass(slots=True)
class _Visit:
    """A HyperNode on the walk's trail: its children still to visit, what it has found so far."""

    name: str
    todo: Iterator[str]
    found: set[str]  # HyperNodes whose own nodes it contains
    parts: list[DomainExpr | None]  # its Node members' and its children's domains

    @classmethod
    def of(cls, hn: HyperNode, children: Mapping[str, Sequence[str]]) -> _Visit:
        return cls(hn.name, iter(children.get(hn.name, ())), {hn.name}, [m.single for m in hn.node_members])


def hierarchy(hypernodes: Mapping[str, HyperNode], children: Mapping[str, Sequence[str]]) -> Hierarchy:
    """`children[p]`: the HyperNodes p's HyperNode members select, member by member. A depth-first
    walk from each HyperNode in name order; a HyperNode met again on its own trail is a cycle:
    warned, and it adds nothing there. Iterative: no depth of nesting can overflow the stack."""
    below: dict[str, frozenset[str]] = {}
    exprs: dict[str, DomainExpr | None] = {}
    warnings: list[str] = []
    for root in sorted(hypernodes):
        if root in below:
            continue
        trail = [_Visit.of(hypernodes[root], children)]
        while trail:
            visit = trail[-1]
            child = next(visit.todo, None)
            if child is None:
                trail.pop()
                below[visit.name], exprs[visit.name] = frozenset(visit.found), combined(visit.parts)
                if trail:
                    trail[-1].found |= below[visit.name]
                    trail[-1].parts.append(exprs[visit.name])
            elif child in below:
                visit.found |= below[child]
                visit.parts.append(exprs[child])
            elif any(v.name == child for v in trail):
                warnings.append(f"HyperNode {child!r} contains itself through {' -> '.join(v.name for v in trail)}")
                visit.parts.append(None)
            else:
                trail.append(_Visit.of(hypernodes[child], children))
    return Hierarchy(below, exprs, warnings)


def above(below: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """HyperNode -> the HyperNodes that contain its own nodes (itself too): `below` inverted."""
    out: dict[str, set[str]] = {}
    for outer, inner in below.items():
        for name in inner:
            out.setdefault(name, set()).add(outer)
    return {name: frozenset(outers) for name, outers in out.items()}


def node_path(node: str, holders: Iterable[str], tier_of: Mapping[str, int]) -> tuple[Path, list[str]]:
    """The node's path through the HyperNodes that contain it, and a warning for each tier
    where two do (the first by name is kept)."""
    by_tier: dict[int, list[str]] = {}
    for name in holders:
        by_tier.setdefault(tier_of[name], []).append(name)
    path, warnings = [], []
    for tier in sorted(by_tier):
        kept, *others = sorted(by_tier[tier])
        path.append((level(tier), kept))
        warnings += [f"node {node!r} is in two tier-{tier} HyperNodes ({kept!r}, {o!r}); using {kept!r}" for o in others]
    return tuple(path), warnings


# -- from scratch --------------------------------------------------------------------------------

def hypernode_topology(raw_hypernodes: Iterable[dict[str, Any]], node_labels: Mapping[str, Mapping[str, str]]) -> HyperNodeTopology:
    """Every node's path through the HyperNodes, computed from nothing: O(HyperNodes x nodes)."""
    out = HyperNodeTopology()
    hypernodes: dict[str, HyperNode] = {}
    for raw in raw_hypernodes:
        hn, warning = parse(raw)
        if hn is None:
            out.warnings.append(warning)  # type: ignore[arg-type]
        else:
            hypernodes[hn.name] = hn
    if not hypernodes:
        return out
    out.max_tier = max(hn.tier for hn in hypernodes.values())
    children = {name: [c for cs in hn.group_matches(hypernodes) for c in cs] for name, hn in hypernodes.items()}
    tree = hierarchy(hypernodes, children)
    out.selectors = selectors(hypernodes, tree.exprs)
    out.warnings += tree.warnings
    outers = above(tree.below)
    tier_of = {name: hn.tier for name, hn in hypernodes.items()}
    for node in sorted(node_labels):
        labels = node_labels[node]
        holders = {o for name, hn in hypernodes.items() if hn.holds_node(node, labels) for o in outers.get(name, ())}
        path, warnings = node_path(node, holders, tier_of)
        if path:
            out.paths[node] = path
        out.warnings += warnings
    return out
