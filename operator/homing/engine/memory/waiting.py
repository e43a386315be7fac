"""Accelerator pods that will take free room before a pod admitted now: pods the watch
shows pending, and admissions the watch has not shown yet. A burst of 16 replicas is
admitted before any of them binds: with room for 8, the cluster still looks free to all
16, yet the last 8 will make the scheduler evict (behaviour.md "Beyond the home")."""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from homing.engine.memory.loads import Load

INFLIGHT_SECONDS = 5.0  # an admitted pod the watch has not shown by then was never created


@dataclass(slots=True)
class Waiting:
    pending: dict[str, Load] = field(default_factory=dict)  # pod uid -> what the unbound pod asks for
    sizes: dict[int, Counter[int]] = field(default_factory=dict)  # priority -> npus -> pending pods
    inflight: dict[str, deque[tuple[float, Load]]] = field(default_factory=dict)  # owner key -> admitted, unseen
    owners: dict[str, Counter[int]] = field(default_factory=dict)  # owner key -> its pending pods' priorities

    def admitted(self, load: Load, now: float) -> None:
        if load.npus > 0:
            self.inflight.setdefault(load.owner_key, deque()).append((now, load))

    def arrived(self, owner_key: str) -> None:
        """The watch showed a new pod of the owner: one of its admissions is no longer in flight."""
        queue = self.inflight.get(owner_key)
        if queue:
            queue.popleft()
        if queue is not None and not queue:
            del self.inflight[owner_key]

    def wait(self, uid: str, load: Load | None) -> None:
        """`load`: the pod is pending and asks for it; None: bound, ended or gone."""
        old = self.pending.pop(uid, None)
        if old is not None:
            self._count(old, -1)
        if load is not None and load.npus > 0:
            self.pending[uid] = load
            self._count(load, 1)

    def _count(self, load: Load, by: int) -> None:
        mine = self.owners.setdefault(load.owner_key, Counter())
        mine[load.priority] += by
        if mine[load.priority] <= 0:
            del mine[load.priority]
        if not mine:
            del self.owners[load.owner_key]
        sizes = self.sizes.setdefault(load.priority, Counter())
        sizes[load.npus] += by
        if sizes[load.npus] <= 0:
            del sizes[load.npus]
        if not sizes:
            del self.sizes[load.priority]

    def priority(self, owner_key: str) -> int | None:
        """The highest priority among the owner's pending accelerator pods; None: none pending."""
        mine = self.owners.get(owner_key)
        return max(mine) if mine else None

    def ahead(self, priority: int, npus: int, now: float) -> int:
        """How many pods of `npus` the pods ahead of one of `priority` fill: pending or in
        flight, at the same or a higher priority (its scheduler places those first)."""
        slots = 0
        for prio, sizes in self.sizes.items():
            if prio >= priority:
                slots += sum(-(-size // npus) * count for size, count in sizes.items())
        for load in self._inflight(now):
            if load.priority >= priority:
                slots += -(-load.npus // npus)
        return slots

    def _inflight(self, now: float) -> Iterator[Load]:
        for key in list(self.inflight):
            queue = self.inflight[key]
            while queue and now - queue[0][0] > INFLIGHT_SECONDS:
                queue.popleft()
            if not queue:
                del self.inflight[key]
                continue
            yield from (load for _, load in queue)
