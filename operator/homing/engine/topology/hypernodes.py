"""Volcano HyperNodes (topology.volcano.sh/v1alpha1) as topology levels `tier1..tierN`.

A HyperNode's members are Nodes (tier 1, usually) or HyperNodes, matched by exact
name, regex or label selector. A node's path holds, for each tier, the HyperNode that
contains it. A domain becomes a term by its members' label when they are all selected
by one label key, otherwise by the hostnames of its nodes."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from homing.engine import labelselector
from homing.engine.model import DomainExpr, Path


@dataclass(slots=True)
class HyperNodeTopology:
    paths: dict[str, Path] = field(default_factory=dict)  # node -> (("tier1", hn), ...)
    selectors: dict[tuple[str, str], DomainExpr] = field(default_factory=dict)
    max_tier: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _HyperNode:
    name: str
    tier: int
    members: tuple[dict, ...]


def _parse(raw: dict, warnings: list[str]) -> _HyperNode | None:
    name = (raw.get("metadata") or {}).get("name")
    spec = raw.get("spec") or {}
    tier = spec.get("tier")
    if not name or not isinstance(tier, int) or tier < 1:
        warnings.append(f"HyperNode {name!r} ignored: spec.tier must be a positive integer")
        return None
    members = tuple(m for m in spec.get("members") or () if isinstance(m, dict))
    return _HyperNode(name, tier, members)


def _label_match(selector: object, labels: Mapping[str, str]) -> bool:
    if labelselector.is_empty(selector):
        return False  # a labelMatch without requirements selects no node: else one empty selector takes them all
    return labelselector.matches(selector, labels)


def _matches(member: dict, name: str, labels: Mapping[str, str]) -> bool:
    selector = member.get("selector") or {}
    if not isinstance(selector, dict):
        return False
    if "exactMatch" in selector:
        return (selector["exactMatch"] or {}).get("name") == name
    if "regexMatch" in selector:
        pattern = (selector["regexMatch"] or {}).get("pattern") or ""
        try:
            return re.fullmatch(pattern, name) is not None
        except re.error:
            return False
    if "labelMatch" in selector:
        return _label_match(selector["labelMatch"], labels)
    return False


def _single_label(member: dict) -> DomainExpr | None:
    """The member's selector as `key In [value]`, when it is exactly one label."""
    selector = member.get("selector") or {}
    match = selector.get("labelMatch") if isinstance(selector, dict) else None
    if not labelselector.requirements(match):
        return None  # no label selector, or a malformed one
    labels = match.get("matchLabels") or {}
    if len(labels) == 1 and not match.get("matchExpressions"):
        (key, value), = labels.items()
        return DomainExpr(key, (str(value),))
    return None


def hypernode_topology(raw_hypernodes: Iterable[dict], node_labels: Mapping[str, Mapping[str, str]]) -> HyperNodeTopology:
    out = HyperNodeTopology()
    hypernodes: dict[str, _HyperNode] = {}
    for raw in raw_hypernodes:
        hn = _parse(raw, out.warnings)
        if hn is not None:
            hypernodes[hn.name] = hn
    if not hypernodes:
        return out
    out.max_tier = max(hn.tier for hn in hypernodes.values())

    nodes_of: dict[str, frozenset[str]] = {}
    exprs: dict[str, DomainExpr | None] = {}

    def resolve(name: str, trail: tuple[str, ...]) -> frozenset[str]:
        if name in nodes_of:
            return nodes_of[name]
        if name in trail:
            out.warnings.append(f"HyperNode {name!r} contains itself through {' -> '.join(trail)}")
            return frozenset()
        hn = hypernodes[name]
        found: set[str] = set()
        parts: list[DomainExpr | None] = []
        for member in hn.members:
            if member.get("type", "Node") == "Node":
                exact = ((member.get("selector") or {}).get("exactMatch") or {}).get("name")
                if exact is not None:
                    found |= {exact} if exact in node_labels else set()
                else:
                    found |= {n for n, labels in node_labels.items() if _matches(member, n, labels)}
                parts.append(_single_label(member))
            else:
                children = [c for c in sorted(hypernodes) if c != name and _matches(member, c, {})]
                for child in children:
                    found |= resolve(child, (*trail, name))
                    parts.append(exprs.get(child))
        keys = {p.key for p in parts if p is not None}
        exprs[name] = (
            DomainExpr(keys.pop(), tuple(sorted({v for p in parts if p for v in p.values})))
            if parts and all(p is not None for p in parts) and len(keys) == 1
            else None
        )
        nodes_of[name] = frozenset(found)
        return nodes_of[name]

    placed: dict[tuple[str, int], str] = {}  # (node, tier) -> HyperNode
    for name in sorted(hypernodes):
        tier = hypernodes[name].tier
        for node in sorted(resolve(name, ())):
            other = placed.get((node, tier))
            if other is not None and other != name:
                out.warnings.append(f"node {node!r} is in two tier-{tier} HyperNodes ({other!r}, {name!r}); using {other!r}")
                continue
            placed[(node, tier)] = name
        if exprs.get(name) is not None:
            out.selectors[(f"tier{tier}", name)] = exprs[name]  # type: ignore[assignment]
    paths: dict[str, list[tuple[int, str]]] = {}
    for (node, tier), name in placed.items():
        paths.setdefault(node, []).append((tier, name))
    out.paths = {node: tuple((f"tier{t}", hn) for t, hn in sorted(tiers)) for node, tiers in paths.items()}
    return out
