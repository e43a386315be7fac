"""Which lower-priority workload alone holds each node (behaviour.md "Beyond the home"), per pod size and
priority asked, kept up to date node by node: an admission pays for the nodes whose pods
changed since the last one, not for every accelerator pod in the cluster."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from homing.engine.model import ClusterSnapshot

MAX_ASKS = 16  # distinct (priority, npus) kept; more is a cluster of unusual shapes: start over


@dataclass(slots=True)
class _Ask:
    by_node: dict[str, str] = field(default_factory=dict)  # node -> its one victim
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # victim -> its nodes
    dirty: set[str] = field(default_factory=set)  # nodes to look at again


@dataclass(slots=True)
class EvictionView:
    asks: dict[tuple[int, int], _Ask] = field(default_factory=dict)
    seen: tuple[int, int] = (-1, -1)  # (snapshot token, generation) the asks are up to date with

    def touch(self, node: str) -> None:
        """Pods on `node` came, went or changed."""
        for ask in self.asks.values():
            ask.dirty.add(node)

    def victims(self, priority: int, npus: int, snapshot: ClusterSnapshot, occupied: Iterable[str],
                victim_of: Callable[[str], str | None]) -> dict[str, set[str]]:
        """victim -> nodes; `occupied`: every node with accelerator pods (read on a new ask);
        `victim_of(node)`: the node's one victim now. The answer is live: read, don't keep."""
        changed, self.seen = snapshot.catch_up(self.seen)
        if changed is None:
            self.asks.clear()
        else:
            for node in changed:
                self.touch(node)
        ask = self.asks.get((priority, npus))
        if ask is None:
            if len(self.asks) >= MAX_ASKS:
                self.asks.clear()
            ask = self.asks[(priority, npus)] = _Ask(dirty=set(occupied))
        for node in ask.dirty:
            old = ask.by_node.pop(node, None)
            if old is not None:
                nodes = ask.by_owner[old]
                nodes.discard(node)
                if not nodes:
                    del ask.by_owner[old]
            new = victim_of(node)
            if new is not None:
                ask.by_node[node] = new
                ask.by_owner.setdefault(new, set()).add(node)
        ask.dirty.clear()
        return ask.by_owner
