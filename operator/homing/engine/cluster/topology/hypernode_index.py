"""Node paths through Volcano HyperNodes, kept up to date one change at a time (behaviour.md "Operation":
no rebuild of every node's path on the loop that serves admissions).

What each change costs:
- a node's labels change: the HyperNodes that could select it are looked up
  (hypernode_lookups.py), then its path is read from `outers`: O(HyperNodes) at worst,
  no other node;
- a HyperNode changes: its own members are matched against the nodes they could select
  (same lookups the other way round); the hierarchy is recomputed for it and the
  HyperNodes above it only (all of it, no node in it, when there is a cycle: a cycle's
  outcome depends on the order of the walk); only the nodes whose containing HyperNodes
  changed get a new path;
- a whole listing: everything once, one walk, one path per node.

The result is hypernode_topology()'s for the same HyperNodes and node labels; the tests
check it after random sequences of changes."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from homing.engine.cluster.topology.hypernode_lookups import MemberLookups
from homing.engine.cluster.topology.hypernode_walk import children_first, reaches_itself, upwards
from homing.engine.cluster.topology.hypernodes import (
    NO_LABELS,
    HyperNode,
    above,
    combined,
    hierarchy,
    hypernode_name,
    node_path,
    parse,
    selectors,
)
from homing.engine.model import DomainExpr, Path, discard_from


@dataclass(slots=True)
class HyperNodeIndex:
    hypernodes: dict[str, HyperNode] = field(default_factory=dict)  # the usable ones, by name
    bad: dict[str, str] = field(default_factory=dict)  # name -> why that HyperNode is ignored
    labels: dict[str, Mapping[str, str]] = field(default_factory=dict)  # node -> its labels
    # who selects whom
    own_nodes: dict[str, set[str]] = field(default_factory=dict)  # HyperNode -> nodes its Node members select
    selected_by: dict[str, set[str]] = field(default_factory=dict)  # node -> HyperNodes whose Node members select it
    matched: dict[str, list[set[str]]] = field(default_factory=dict)  # HyperNode -> per HyperNode member, what it selects
    parents: dict[str, set[str]] = field(default_factory=dict)  # HyperNode -> HyperNodes whose members select it
    lookups: MemberLookups = field(default_factory=MemberLookups)
    # the result
    outers: dict[str, set[str]] = field(default_factory=dict)  # HyperNode -> HyperNodes containing its own nodes
    below: dict[str, frozenset[str]] = field(default_factory=dict)  # HyperNode -> HyperNodes whose own nodes it contains
    exprs: dict[str, DomainExpr | None] = field(default_factory=dict)  # HyperNode -> its domain as one label selector
    selectors: dict[tuple[str, str], DomainExpr] = field(default_factory=dict)
    max_tier: int = 0
    cycles: list[str] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # node -> its two-HyperNodes-in-a-tier warnings

    @property
    def warnings(self) -> list[str]:
        return [*self.bad.values(), *self.cycles, *(w for node in sorted(self.conflicts) for w in self.conflicts[node])]

    # -- nodes ------------------------------------------------------------------------------------

    def set_node(self, node: str, labels: Mapping[str, str]) -> bool:
        """A node appeared or its labels changed; whether its path changed."""
        self.lookups.node_labelled(node, self.labels.get(node), labels)
        self.labels[node] = labels
        selecting = {n for n in self.lookups.candidates(node, labels) if self.hypernodes[n].holds_node(node, labels)}
        self._reselect(node, selecting)
        return self._repath(node)

    def remove_node(self, node: str) -> bool:
        """A node is gone; whether it had a path."""
        self.lookups.node_labelled(node, self.labels.pop(node, None), None)
        self._reselect(node, set())
        return self._repath(node)

    def _reselect(self, node: str, selecting: set[str]) -> None:
        before = self.selected_by.pop(node, set())
        for name in before - selecting:
            self.own_nodes[name].discard(node)
        for name in selecting - before:
            self.own_nodes[name].add(node)
        if selecting:
            self.selected_by[node] = selecting

    def _repath(self, node: str) -> bool:
        """Recompute one node's path; whether it changed."""
        holders = {o for name in self.selected_by.get(node, ()) for o in self.outers.get(name, ())}
        path, conflicts = node_path(node, holders, {n: self.hypernodes[n].tier for n in holders})
        old = self.paths.get(node, ())
        if path:
            self.paths[node] = path
        else:
            self.paths.pop(node, None)
        if conflicts:
            self.conflicts[node] = conflicts
        else:
            self.conflicts.pop(node, None)
        return path != old

    # -- HyperNodes -------------------------------------------------------------------------------

    def put(self, raw: object) -> set[str]:
        """A HyperNode appeared or changed; the nodes whose path changed."""
        return self._change(hypernode_name(raw), raw)

    def remove(self, name: str) -> set[str]:
        """A HyperNode is gone; the nodes whose path changed."""
        return self._change(name, None)

    def _change(self, name: str, raw: object | None) -> set[str]:
        above_before = self._above(name)
        touched = self._replace(name, raw)
        if self.cycles or self._in_cycle(name):
            return self._restructure(touched)
        return self._rewalk(above_before | self._above(name), touched)

    def load(self, raws: Iterable[object]) -> set[str]:
        """A whole listing replaces every HyperNode known: one walk of the hierarchy for all."""
        listed = {hypernode_name(raw): raw for raw in raws}
        touched: set[str] = set()
        for name in set(self.hypernodes) | set(self.bad) | set(listed):
            touched |= self._replace(name, listed.get(name), link=False)
        self.matched = {name: [set(names) for names in hn.group_matches(self.hypernodes)]
                        for name, hn in self.hypernodes.items() if hn.group_members}
        self.parents = {}
        for outer, selected in self.matched.items():
            for child in set().union(*selected):
                self.parents.setdefault(child, set()).add(outer)
        return self._restructure(touched)

    def _replace(self, name: str, raw: object | None, link: bool = True) -> set[str]:
        """Swap one HyperNode (None: delete it) without walking the hierarchy; `link`: match
        the HyperNode members at once (a listing matches them all at the end). The nodes
        whose path it may change: those it selected or selects now, and all it contained
        when its tier changes (their paths name its tier)."""
        old = self.hypernodes.get(name)
        hn, warning = parse(raw) if raw is not None else (None, None)
        touched: set[str] = set()
        if old is not None:
            if hn is not None and hn.tier != old.tier:
                touched |= self._held(name)
            touched |= self._drop(old)
        self.bad.pop(name, None)
        if warning is not None:
            self.bad[name] = warning
        if hn is not None:
            touched |= self._take(hn, link)
        return touched

    def _held(self, name: str) -> set[str]:
        """The nodes a HyperNode contained at the last walk of the hierarchy."""
        return {node for inner in self.below.get(name, ()) for node in self.own_nodes.get(inner, ())}

    def _drop(self, hn: HyperNode) -> set[str]:
        """Forget a HyperNode, its members and what they selected; the nodes it selected."""
        del self.hypernodes[hn.name]
        for m in hn.node_members:
            self.lookups.unregister(hn.name, m)
        self.lookups.scan.discard(hn.name)
        for child in self._children(hn.name):
            discard_from(self.parents, child, hn.name)
        self.matched.pop(hn.name, None)
        for outer in self.parents.pop(hn.name, ()):
            for names in self.matched[outer]:
                names.discard(hn.name)
        own = self.own_nodes.pop(hn.name, set())
        for node in own:
            discard_from(self.selected_by, node, hn.name)
        return own

    def _take(self, hn: HyperNode, link: bool) -> set[str]:
        """Learn a HyperNode, its members and what they select; the nodes it selects."""
        self.hypernodes[hn.name] = hn
        for m in hn.node_members:
            self.lookups.register(hn.name, m, self.labels)
        if link:
            for outer, selected in self.matched.items():  # the others' HyperNode members that select it
                for m, names in zip(self.hypernodes[outer].group_members, selected):
                    if m.selects(hn.name, NO_LABELS):
                        names.add(hn.name)
                        self.parents.setdefault(hn.name, set()).add(outer)
            if hn.group_members:
                self.matched[hn.name] = [set(names) for names in hn.group_matches(self.hypernodes)]
                for child in self._children(hn.name):
                    self.parents.setdefault(child, set()).add(hn.name)
        own: set[str] = set().union(*(self.lookups.selected_nodes(m, self.labels) for m in hn.node_members))
        self.own_nodes[hn.name] = own
        for node in own:
            self.selected_by.setdefault(node, set()).add(hn.name)
        return own

    # -- the hierarchy ----------------------------------------------------------------------------

    def _children(self, name: str) -> set[str]:
        return set().union(*self.matched.get(name, ()))

    def _above(self, name: str) -> set[str]:
        return upwards(name, self.parents)

    def _in_cycle(self, name: str) -> bool:
        return reaches_itself(name, self._children)

    def _restructure(self, touched: set[str]) -> set[str]:
        """Walk the whole hierarchy again, in the order hypernode_topology() does (a cycle's
        outcome depends on it); repath the touched nodes and the own nodes of every
        HyperNode whose containing HyperNodes changed. The nodes whose path changed."""
        children = {outer: [c for names in selected for c in sorted(names)] for outer, selected in self.matched.items()}
        tree = hierarchy(self.hypernodes, children)
        outers = above(tree.below)
        for name in outers.keys() | self.outers.keys():
            if outers.get(name) != self.outers.get(name):
                touched |= self.own_nodes.get(name, set())
        self.below, self.exprs, self.cycles = tree.below, tree.exprs, tree.warnings
        self.outers = {name: set(found) for name, found in outers.items()}
        return self._finish(touched)

    def _rewalk(self, stale: set[str], touched: set[str]) -> set[str]:
        """Recompute `below` and the domain of the stale HyperNodes only (a change and all
        above it, before and after), children first; the hierarchy has no cycle."""
        order = children_first(stale, self.hypernodes, self._children)
        before = {name: self.below.pop(name, frozenset()) for name in stale}
        for name in stale - self.hypernodes.keys():
            self.exprs.pop(name, None)
        for name in order:
            kids = self._children(name)
            self.below[name] = frozenset({name}.union(*(self.below[c] for c in kids)))
            self.exprs[name] = combined([m.single for m in self.hypernodes[name].node_members] + [self.exprs[c] for c in kids])
        for name in stale:
            now = self.below.get(name, frozenset())
            for inner in before[name] - now:
                discard_from(self.outers, inner, name)
                touched |= self.own_nodes.get(inner, set())
            for inner in now - before[name]:
                self.outers.setdefault(inner, set()).add(name)
                touched |= self.own_nodes.get(inner, set())
        return self._finish(touched)

    def _finish(self, touched: set[str]) -> set[str]:
        """The HyperNode-wide results, then the touched nodes' paths; those that changed."""
        self.selectors = selectors(self.hypernodes, self.exprs)
        self.max_tier = max((hn.tier for hn in self.hypernodes.values()), default=0)
        return {node for node in touched if self._repath(node)}


