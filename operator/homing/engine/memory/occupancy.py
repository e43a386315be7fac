"""Which node every accelerator pod of any workload sits on and what it holds there:
the room left on each node, who alone holds it, and the priorities running. Kept pod by
pod as the watch reports them (the free-room and eviction views catch up from it)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from homing.engine.memory.eviction import EvictionView
from homing.engine.memory.loads import Load
from homing.engine.memory.room import RoomView


@dataclass(slots=True)
class Occupancy:
    occupants: dict[str, set[str]] = field(default_factory=dict)  # node -> accelerator pods of any workload
    pod_node: dict[str, str] = field(default_factory=dict)  # accelerator pod uid -> its node
    pod_load: dict[str, Load] = field(default_factory=dict)  # accelerator pod uid -> what it holds
    node_used: dict[str, int] = field(default_factory=dict)  # node -> accelerators its pods hold
    load_priorities: Counter[int] = field(default_factory=Counter)  # priority -> bound accelerator pods
    owner_priorities: dict[str, Counter[int]] = field(default_factory=dict)  # owner key -> its bound pods' priorities
    eviction: EvictionView = field(default_factory=EvictionView)  # who alone holds each node, kept by occupy()
    room: RoomView = field(default_factory=RoomView)  # free accelerators per node, kept by occupy()

    def occupy(self, pod_uid: str, node: str | None, load: Load | None = None) -> None:
        """Where an accelerator pod of any namespace sits now, and what it holds; None when it left."""
        old = self.pod_node.get(pod_uid)
        if old == node and self.pod_load.get(pod_uid) == load:
            return  # a status update: nothing moved
        for touched in (old, node):
            if touched is not None:
                self.eviction.touch(touched)
                self.room.touch(touched)
        if old is not None:
            left = self.occupants.get(old)
            if left is not None:
                left.discard(pod_uid)
                if not left:
                    del self.occupants[old]
            del self.pod_node[pod_uid]
            held = self.pod_load.pop(pod_uid, None)
            if held is not None:
                self._use(old, -held.npus)
                self.load_priorities[held.priority] -= 1
                if self.load_priorities[held.priority] <= 0:
                    del self.load_priorities[held.priority]
                mine = self.owner_priorities[held.owner_key]
                mine[held.priority] -= 1
                if mine[held.priority] <= 0:
                    del mine[held.priority]
                if not mine:
                    del self.owner_priorities[held.owner_key]
        if node is not None:
            self.pod_node[pod_uid] = node
            self.occupants.setdefault(node, set()).add(pod_uid)
            if load is not None:
                self.pod_load[pod_uid] = load
                self._use(node, load.npus)
                self.load_priorities[load.priority] += 1
                self.owner_priorities.setdefault(load.owner_key, Counter())[load.priority] += 1

    def _use(self, node: str, npus: int) -> None:
        total = self.node_used.get(node, 0) + npus
        if total > 0:
            self.node_used[node] = total
        else:
            self.node_used.pop(node, None)

    def lower_priority_than(self, priority: int) -> bool:
        """Some bound accelerator pod has a lower priority (few distinct priorities: cheap)."""
        return any(p < priority for p in self.load_priorities)

    def loads_on(self, node: str) -> list[Load]:
        return [self.pod_load[uid] for uid in self.occupants.get(node, ()) if uid in self.pod_load]

    def node_loads(self) -> dict[str, list[Load]]:
        out: dict[str, list[Load]] = {}
        for uid, load in self.pod_load.items():
            out.setdefault(self.pod_node[uid], []).append(load)
        return out

    def occupied_by_others(self, node: str, pod_uid: str) -> bool:
        return bool(self.occupants.get(node, set()) - {pod_uid})
