"""The live pods of tracked owners, and per owner how many are active (neither ended
nor terminating), going (terminating before they ended) and pending (not bound): claimed homes read the counts on every
admission, so they are kept as pods come and go. A pod that names a node it does not hold
(behaviour.md "Tenants") is neither: nothing will place it, so nobody waits for it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class LivePod:
    owner_key: str
    rank: str | None
    node: str | None
    terminating: bool = False
    judged: bool = False  # its end was judged fault or not (behaviour.md "Memory": once, when it ended)
    running: bool = False  # a container started: its images are on the node
    ended: bool = False  # Succeeded or Failed: its owner no longer waits for it
    generation: int | None = None  # its workload's restart (engine/identity/generation.py); None: unknown
    unplaced: bool = False  # names a node no scheduler bound it to, and never ran there

    @property
    def pending(self) -> bool:
        return self.node is None and not self.unplaced and not self.terminating and not self.ended

    @property
    def active(self) -> bool:
        return not (self.ended or self.terminating or self.unplaced)

    @property
    def going(self) -> bool:
        """Deleted before it ended: a restart or an eviction takes it, not its own end."""
        return self.terminating and not self.ended and not self.unplaced


@dataclass(slots=True)
class LivePods:
    live: dict[str, LivePod] = field(default_factory=dict)  # pod uid -> tracked pod
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> pod uids
    active: Counter[str] = field(default_factory=Counter)
    pending: Counter[str] = field(default_factory=Counter)
    going: Counter[str] = field(default_factory=Counter)

    def seen(self, pod_uid: str, pod: LivePod) -> None:
        old = self.live.get(pod_uid)
        if old is not None and old.owner_key != pod.owner_key:
            self.gone(pod_uid)
            old = None
        if old is not None:
            self._count(old, -1)
        self.live[pod_uid] = pod
        self._count(pod, 1)
        self.by_owner.setdefault(pod.owner_key, set()).add(pod_uid)

    def _count(self, pod: LivePod, step: int) -> None:
        for counts, counted in ((self.active, pod.active), (self.pending, pod.pending), (self.going, pod.going)):
            if counted:
                counts[pod.owner_key] += step
                if counts[pod.owner_key] <= 0:
                    del counts[pod.owner_key]

    def gone(self, pod_uid: str) -> LivePod | None:
        pod = self.live.pop(pod_uid, None)
        if pod is not None:
            self._count(pod, -1)
            uids = self.by_owner.get(pod.owner_key)
            if uids is not None:
                uids.discard(pod_uid)
                if not uids:
                    del self.by_owner[pod.owner_key]
        return pod

    def occupied_nodes(self, key: str, generation: int | None = None) -> set[str]:
        """`generation`: the owner's current one; a pod of an earlier one was deleted by a restart."""
        nodes: set[str] = set()
        for uid in self.by_owner.get(key, ()):
            pod = self.live[uid]
            if pod.node and not pod.terminating and not _earlier(pod.generation, generation):
                nodes.add(pod.node)
        return nodes


def _earlier(generation: int | None, current: int | None) -> bool:
    return generation is not None and current is not None and generation < current
