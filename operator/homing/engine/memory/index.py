"""The in-memory index the webhook reads: every owner's memory, the live pods, which
accelerator pod sits on which node, and the promises made to pending rankless pods.
The operator feeds it; the custom resources are its durable mirror. All methods are
synchronous and take `now`. Owners are keyed by `OwnerRef.key` (namespace/UID)."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from homing.engine.memory import changes
from homing.engine.memory.entries import OwnerMemory, Topology
from homing.engine.memory.image_runs import ImageRuns
from homing.engine.memory.live import LivePod, LivePods
from homing.engine.memory.loads import BURST_SECONDS, Band, Burst, Load, band
from homing.engine.memory.occupancy import Occupancy
from homing.engine.memory.promises import Promises
from homing.engine.memory.room import RoomView
from homing.engine.memory.siblings import RunsKept
from homing.engine.memory.vacancies import Vacancies
from homing.engine.memory.waiting import Waiting
from homing.engine.model import OwnerRef

__all__ = ["LivePod", "MemoryIndex"]


@dataclass(slots=True)
class MemoryIndex:
    owners: dict[str, OwnerMemory] = field(default_factory=dict)
    pods: LivePods = field(default_factory=LivePods)  # the live pods of tracked owners
    occupancy: Occupancy = field(default_factory=Occupancy)  # what accelerator pods hold on which node
    promised: Promises = field(default_factory=Promises)  # homes promised to pending rankless pods
    vacancies: Vacancies = field(default_factory=Vacancies)  # homes no pod of their owner holds (in a view: its namespace's)
    images: ImageRuns = field(default_factory=ImageRuns)  # where each image last ran, per namespace
    bursts: dict[Band, Burst] = field(default_factory=dict)  # (namespace, priority) -> its latest burst, while it lasts
    waiting: Waiting = field(default_factory=Waiting)  # accelerator pods not bound yet, any workload
    dirty: set[str] = field(default_factory=set)  # owners whose custom resource is behind
    sibling_runs: RunsKept = field(default_factory=RunsKept)  # the owners whose sibling walks are cached
    rank_count: int = 0
    max_ranks_per_owner: int = 8192  # keeps one owner's memory bounded
    restart_hold: float = 0.0  # how long a ranked owner whose pods all went is still expected back (active)
    _topologies: dict[Topology, Topology] = field(default_factory=dict)
    tenant: str | None = None  # the namespace a view is seen from (memory/tenancy.py); None: the whole index

    # -- owners ---------------------------------------------------------------
    def owner(self, key: str) -> OwnerMemory | None:
        return self.owners.get(key)

    def ensure(self, owner: OwnerRef, now: float) -> OwnerMemory:
        mem = self.owners.get(owner.key)
        if mem is None:
            mem = self.owners[owner.key] = OwnerMemory(owner=owner, last_seen=now, seen_marked=now)
        return mem

    def adopt(self, mem: OwnerMemory) -> None:
        """Take a memory loaded from its custom resource (start-up)."""
        old = self.owners.get(mem.owner.key)
        if old is not None:
            self.rank_count -= len(old.ranks)
        for entry in mem.ranks.values():
            entry.node = sys.intern(entry.node)
            entry.topology = self._intern(entry.topology)
        self.owners[mem.owner.key] = mem
        self.rank_count += len(mem.ranks)

    def forget(self, key: str) -> OwnerMemory | None:
        mem = self.owners.pop(key, None)
        if mem is not None:
            self.rank_count -= len(mem.ranks)
        self.promised.forget(key)
        self.dirty.discard(key)
        for node in list(self.vacant_by_owner.get(key, ())):
            self.reoccupy(node, key)
        return mem

    def owners_in(self, namespace: str) -> list[str]:
        prefix = f"{namespace}/"
        return sorted(k for k in self.owners if k.startswith(prefix))

    def _intern(self, topology: Topology) -> Topology:
        # Thousands of ranks share a few topology paths: keep one tuple of each.
        return self._topologies.setdefault(topology, topology)

    def _changed(self, mem: OwnerMemory, changed: bool) -> bool:
        if changed:
            self.dirty.add(mem.owner.key)
        return changed

    # -- memory changes (behaviour.md "Memory") ---------------------------------------------------
    def record_bind(
        self,
        owner: OwnerRef,
        rank: str | None,
        node: str,
        topology: Topology,
        now: float,
        group: str | None = None,
        refresh: bool = True,
    ) -> bool:
        """`refresh`: a new bind (not a resync of one already known) moves a pool entry's lastUsed."""
        mem = self.ensure(owner, now)
        before = len(mem.ranks)
        entry = mem.ranks.get(rank) if rank is not None else None
        left = [entry.node] if entry is not None and entry.node != node else []  # homes this bind may end
        changed = changes.record_bind(mem, rank, sys.intern(node), self._intern(topology), now, group, refresh)
        if len(mem.ranks) > self.max_ranks_per_owner:
            left.append(changes.drop_oldest_rank(mem))
        if len(mem.pool) > self.max_ranks_per_owner:
            oldest = min(mem.pool, key=lambda n: (mem.pool[n].last_used, n))
            del mem.pool[oldest]
            left.append(oldest)
        self.rank_count += len(mem.ranks) - before
        for gone in left:
            # a node that is no longer the owner's home is no longer its vacant home either: left
            # in place, every walk of the vacant homes stepped over it (a gang that restarted
            # elsewhere left 4,096 such at 5,000 nodes, in front of every admission's walk)
            if not self._still_home(gone, mem.owner.key):
                self.vacancies.reoccupy(gone, mem.owner.key)
        return self._changed(mem, changed)

    def mark_warm(self, owner: OwnerRef, rank: str | None, node: str, now: float) -> bool:
        mem = self.ensure(owner, now)
        return self._changed(mem, changes.mark_warm(mem, rank, sys.intern(node), now))

    def record_fault(self, key: str, rank: str, node: str, now: float, keep_for: float) -> bool:
        mem = self.owners.get(key)
        if mem is None:
            return False
        return self._changed(mem, changes.record_fault(mem, rank, sys.intern(node), now, keep_for))

    def touch(self, key: str, now: float, durable_every: float) -> None:
        """A pod of the owner exists at `now`. The durable lastSeen must follow (behaviour.md "Memory"):
        written at least every `durable_every` seconds, so a restart never finds a
        long-running owner stale."""
        mem = self.owners.get(key)
        if mem is None:
            return
        mem.last_seen = max(mem.last_seen, now)
        if mem.seen_marked is None or now - mem.seen_marked >= durable_every:
            mem.seen_marked = now
            self.dirty.add(key)

    def last_pod_gone(self, key: str, now: float) -> None:
        """The owner's last pod went: write lastSeen now, the moment TTL counts from."""
        mem = self.owners.get(key)
        if mem is not None:
            mem.last_seen = mem.seen_marked = max(mem.last_seen, now)
            self.dirty.add(key)

    # -- live pods (memory/live.py) ------------------------------------------------------
    live = property(lambda self: self.pods.live)
    live_by_owner = property(lambda self: self.pods.by_owner)

    def pod_seen(self, pod_uid: str, pod: LivePod) -> None:
        self.pods.seen(pod_uid, pod)

    def pod_gone(self, pod_uid: str) -> LivePod | None:
        return self.pods.gone(pod_uid)

    def occupied_nodes(self, key: str, generation: int | None = None) -> set[str]:
        """Nodes where a live, not terminating pod of the owner is bound; with `generation`
        (the owner's current restart), not one of an earlier restart."""
        return self.pods.occupied_nodes(key, generation)

    def has_live_pods(self, key: str) -> bool:
        return bool(self.pods.by_owner.get(key))

    def active(self, key: str, now: float) -> bool:
        """The owner is expected back (behaviour.md "Claimed homes"): some pod of it exists and
        has not ended or named a node it does not hold, or its pods went before they ended
        (deleted or terminating: a gang restart deletes every pod and creates them again)
        less than `restart_hold` ago. The hold's clock is the stored lastSeen, written when the
        last pod went, so a restarted replica holds the same owners as one that saw them go."""
        if self.pods.active.get(key, 0) > 0 or self.pods.going.get(key, 0) > 0:
            return True
        return self.held_only(key, now)

    def held_only(self, key: str, now: float) -> bool:
        """Expected back by the restart hold alone: no pod of the owner exists, its last went
        before it ended less than `restart_hold` ago."""
        if self.restart_hold <= 0 or key in self.pods.by_owner:
            return False  # a pod that ended holds the owner's last word: it is done, not restarting
        mem = self.owners.get(key)
        return mem is not None and now - mem.last_seen < self.restart_hold

    def pending_count(self, key: str) -> int:
        return self.pods.pending.get(key, 0)

    # -- node occupancy by any workload's accelerator pods (behaviour.md "Admission" outcome, "Beyond the home") ----------
    def burst(self, load: Load, now: float) -> Burst:
        """A copy of the pod's band's current burst counting one more pod (a new one after a pause)."""
        key = band(load)
        held = self.bursts.get(key)
        if held is None or now - held.last > BURST_SECONDS:
            return Burst(last=now, count=1, band=key)
        return Burst(last=now, count=held.count + 1, band=key, victim=held.victim, used=set(held.used), sent=held.sent)

    def keep_burst(self, burst: Burst) -> None:
        """The admitted pod's burst, for the next pod of its band to agree with; bursts over
        (a pause past BURST_SECONDS) are dropped, so the map holds the bands in flight only."""
        for key in [k for k, b in self.bursts.items() if burst.last - b.last > BURST_SECONDS]:
            del self.bursts[key]
        self.bursts[burst.band] = burst

    # the occupancy's parts, read by the engine's views and the adapters
    occupants = property(lambda self: self.occupancy.occupants)
    pod_node = property(lambda self: self.occupancy.pod_node)
    pod_load = property(lambda self: self.occupancy.pod_load)
    node_used = property(lambda self: self.occupancy.node_used)
    load_priorities = property(lambda self: self.occupancy.load_priorities)
    owner_priorities = property(lambda self: self.occupancy.owner_priorities)
    eviction = property(lambda self: self.occupancy.eviction)

    @property
    def room(self) -> RoomView:
        return self.occupancy.room


    def occupy(self, pod_uid: str, node: str | None, load: Load | None = None) -> None:
        self.occupancy.occupy(pod_uid, node, load)

    def lower_priority_than(self, priority: int) -> bool:
        return self.occupancy.lower_priority_than(priority)

    def loads_on(self, node: str) -> list[Load]:
        return self.occupancy.loads_on(node)

    def node_loads(self) -> dict[str, list[Load]]:
        return self.occupancy.node_loads()

    def occupied_by_others(self, node: str, pod_uid: str) -> bool:
        return self.occupancy.occupied_by_others(node, pod_uid)

    # -- where images ran, per namespace (behaviour.md "Beyond the home") ---------------------
    def ran_images(self, images: tuple[str, ...], node: str, now: float, namespace: str = "") -> None:
        self.images.ran(images, node, now, namespace)

    def ran_here(self, images: tuple[str, ...], node: str, namespace: str = "") -> bool:
        return self.images.ran_here(images, node, namespace)

    def warm_nodes(self, images: tuple[str, ...], namespace: str = "") -> list[str]:
        return self.images.warm_nodes(images, namespace)

    # -- vacant homes, any owner (behaviour.md "Beyond the home") ---------------------------------------------
    vacant = property(lambda self: self.vacancies.vacant)
    vacated_order = property(lambda self: self.vacancies.order)
    vacant_by_owner = property(lambda self: self.vacancies.by_owner)

    def vacate(self, node: str, key: str, now: float) -> None:
        """The owner's home on `node` has no live pod of it any more."""
        self.vacancies.vacate(node, key, now)

    def reoccupy(self, node: str, key: str) -> None:
        self.vacancies.reoccupy(node, key)

    def vacant_homes(self, skip_owner: str | None = None) -> Iterator[str]:
        """Nodes that are some owner's vacant home, most recently vacated first; a node
        vacant only for `skip_owner` is left out (the caller prefers those itself)."""
        return (node for node in reversed(self.vacated_order) if self.is_vacant_home(node, skip_owner))

    def is_vacant_home(self, node: str, skip_owner: str | None = None) -> bool:
        return any(self._still_home(node, k) for k in self.vacancies.owners_at(node) if k != skip_owner)

    def disrupted(self) -> set[str]:
        """Owners missing from one of their homes right now (a gang that restarted
        elsewhere has moved its homes: it is running again, not disrupted)."""
        return {k for k, nodes in self.vacant_by_owner.items() if any(self._still_home(n, k) for n in nodes)}

    def _still_home(self, node: str, key: str) -> bool:
        mem = self.owners.get(key)
        return mem is not None and (node in mem.home_counts or node in mem.pool)

    def drop_old_vacancies(self, now: float, older_than: float) -> None:
        for node, since in list(self.vacated_order.items()):
            if now - since < older_than:
                break  # oldest first: the rest are younger
            for key in list(self.vacant.get(node, ())):
                self.reoccupy(node, key)

    # -- rankless promises (behaviour.md "Admission"): `promised` makes, claims and releases them
    promises = property(lambda self: self.promised.promises)

    def drop_expired_faults(self, now: float, keep_for: float) -> None:
        for mem in self.owners.values():
            self._changed(mem, changes.drop_expired_faults(mem, now, keep_for))
