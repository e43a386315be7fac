"""Which HyperNodes could select a node, and which nodes a HyperNode's member could select:
the lookups that keep one change from trying every node against every HyperNode
(hypernode_index.py). A node is found by its exact name, by the literal prefix of a regex,
by the label of a selector's first In requirement; only expression-only selectors are
tried on every node."""
from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from homing.engine.cluster.labelselector import IN
from homing.engine.cluster.topology.hypernode_members import Member
from homing.engine.model import discard_from


def lookup_key(m: Member) -> tuple[str, frozenset[str]] | None:
    """The label key and values a label member needs one of (its first In requirement)."""
    return next(((r.key, r.values) for r in m.requirements if r.operator == IN), None)


def scanned(m: Member) -> bool:
    """A label member no index narrows (expressions only, no In): tried on every node."""
    return m.exact is None and m.pattern is None and bool(m.requirements) and lookup_key(m) is None


@dataclass(slots=True)
class MemberLookups:
    # a node's candidate HyperNodes
    by_name: dict[str, set[str]] = field(default_factory=dict)  # node name -> HyperNodes with that exactMatch
    by_label: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (key, value) -> HyperNodes needing it
    by_prefix: dict[str, set[str]] = field(default_factory=dict)  # a regex's literal prefix -> HyperNodes with it
    prefix_lengths: Counter[int] = field(default_factory=Counter)  # the lengths of those prefixes, with their uses
    scan: set[str] = field(default_factory=set)  # HyperNodes with a member that is tried on every node
    # a member's candidate nodes: names in order (for regex prefixes), and node values of
    # only the label keys some member needs
    names: list[str] = field(default_factory=list)
    nodes_by_label: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    key_uses: Counter[str] = field(default_factory=Counter)

    def node_labelled(self, node: str, old: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> None:
        """A node appeared (old None), changed, or is gone (labels None)."""
        for key, values in self.nodes_by_label.items():
            if old is not None and key in old:
                discard_from(values, old[key], node)
            if labels is not None and key in labels:
                values.setdefault(labels[key], set()).add(node)
        if old is None and labels is not None:
            bisect.insort(self.names, node)
        elif old is not None and labels is None:
            del self.names[bisect.bisect_left(self.names, node)]

    def candidates(self, node: str, labels: Mapping[str, str]) -> set[str]:
        """The HyperNodes with a member that could select the node."""
        found = set(self.by_name.get(node, ())) | self.scan
        for length in self.prefix_lengths:
            found |= self.by_prefix.get(node[:length], set()) if len(node) >= length else set()
        for pair in labels.items():
            found |= self.by_label.get(pair, set())
        return found

    def register(self, name: str, m: Member, labels: Mapping[str, Mapping[str, str]]) -> None:
        lookup = lookup_key(m)
        if m.exact is not None:
            self.by_name.setdefault(m.exact, set()).add(name)
        elif m.pattern is not None:
            self.by_prefix.setdefault(m.prefix, set()).add(name)
            self.prefix_lengths[len(m.prefix)] += 1
        elif lookup is not None:
            key, values = lookup
            for value in values:
                self.by_label.setdefault((key, value), set()).add(name)
            self._use_key(key, +1, labels)
        elif scanned(m):
            self.scan.add(name)

    def unregister(self, name: str, m: Member) -> None:
        lookup = lookup_key(m)
        if m.exact is not None:
            discard_from(self.by_name, m.exact, name)
        elif m.pattern is not None:
            discard_from(self.by_prefix, m.prefix, name)
            self.prefix_lengths[len(m.prefix)] -= 1
            if self.prefix_lengths[len(m.prefix)] <= 0:
                del self.prefix_lengths[len(m.prefix)]
        elif lookup is not None:
            key, values = lookup
            for value in values:
                discard_from(self.by_label, (key, value), name)
            self._use_key(key, -1, {})

    def _use_key(self, key: str, delta: int, labels: Mapping[str, Mapping[str, str]]) -> None:
        """Index the nodes by a label key while some member needs it."""
        self.key_uses[key] += delta
        if self.key_uses[key] <= 0:
            del self.key_uses[key]
            self.nodes_by_label.pop(key, None)
        elif key not in self.nodes_by_label:
            index: dict[str, set[str]] = {}
            for node, node_labels in labels.items():
                if key in node_labels:
                    index.setdefault(node_labels[key], set()).add(node)
            self.nodes_by_label[key] = index

    def selected_nodes(self, m: Member, labels: Mapping[str, Mapping[str, str]]) -> set[str]:
        """The nodes a Node member selects, of those whose labels are given."""
        if m.exact is not None:
            return {m.exact} if m.exact in labels else set()
        if m.pattern is not None:
            return {node for node in self._named_from(m.prefix) if m.selects(node, labels[node])}
        lookup = lookup_key(m)
        if lookup is not None:
            key, values = lookup
            by_value = self.nodes_by_label.get(key, {})
            candidates: Iterable[str] = set().union(*(by_value.get(v, ()) for v in values))
        elif scanned(m):
            candidates = labels
        else:
            return set()
        return {node for node in candidates if m.selects(node, labels[node])}

    def _named_from(self, prefix: str) -> Iterator[str]:
        """The nodes whose names start with `prefix`."""
        for i in range(bisect.bisect_left(self.names, prefix), len(self.names)):
            if not self.names[i].startswith(prefix):
                return
            yield self.names[i]
