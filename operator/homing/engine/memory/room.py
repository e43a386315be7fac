"""Free accelerators per node, kept up to date node by node (behaviour.md "Beyond the home"): whether a pod
finds room, and where, costs the nodes with room, not a pass over every node (on a full
cluster of 5,000 nodes those passes were most of an admission's time)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from homing.engine.model import ClusterSnapshot, Health


@dataclass(slots=True)
class RoomView:
    free: dict[str, int] = field(default_factory=dict)  # healthy node -> free accelerators, when > 0
    dirty: set[str] = field(default_factory=set)
    seen: tuple[int, int] = (-1, -1)  # (snapshot token, generation) the view is up to date with

    def touch(self, node: str) -> None:
        self.dirty.add(node)

    def _refresh(self, snapshot: ClusterSnapshot, used: dict[str, int]) -> None:
        changed, self.seen = snapshot.catch_up(self.seen)
        if changed is None:
            self.free.clear()
            self.dirty = set(snapshot.nodes)
        else:
            self.dirty |= changed
        for node in self.dirty:
            self.free.pop(node, None)
            state = snapshot.nodes.get(node)
            if state is None or state.health is not Health.HEALTHY or state.npus is None:
                continue
            if state.npus - used.get(node, 0) > 0:
                self.free[node] = state.npus - used.get(node, 0)
        self.dirty.clear()

    def slots(self, snapshot: ClusterSnapshot, used: dict[str, int], npus: int, enough: int) -> int:
        """As displacement.free_slots: pods of `npus` the free room holds, up to `enough`."""
        self._refresh(snapshot, used)
        total = 0
        for free in self.free.values():
            total += free // npus
            if total >= enough:
                break
        return total

    def nodes(self, snapshot: ClusterSnapshot, used: dict[str, int], npus: int, skip: Callable[[str], bool],
              limit: int) -> tuple[str, ...]:
        """As displacement.free_nodes: by name, at most `limit` + 1."""
        self._refresh(snapshot, used)
        fitting = sorted(n for n, free in self.free.items() if free >= npus and not skip(n))
        return tuple(fitting[: limit + 1])
