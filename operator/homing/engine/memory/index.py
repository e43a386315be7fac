"""The in-memory index the webhook reads: every owner's memory, the live pods, which
accelerator pod sits on which node, and the promises made to pending rankless pods.
The operator feeds it; the custom resources are its durable mirror. All methods are
synchronous and take `now`. Owners are keyed by `OwnerRef.key` (namespace/UID)."""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from homing.engine.displacement import BURST_SECONDS, Burst, Load
from homing.engine.memory import changes
from homing.engine.memory.entries import OwnerMemory, Topology
from homing.engine.memory.eviction import EvictionView
from homing.engine.memory.room import RoomView
from homing.engine.memory.waiting import Waiting
from homing.engine.model import OwnerRef
from homing.engine.siblings import RunsKept


MAX_NODES_PER_IMAGE = 1024  # where one image ran: enough for any term list, bounded for memory


@dataclass(slots=True)
class LivePod:
    owner_key: str
    rank: str | None
    node: str | None
    terminating: bool = False
    judged: bool = False  # its end was judged fault or not (behaviour.md "Memory": once, when it ended)
    running: bool = False  # a container started: its images are on the node
    ended: bool = False  # Succeeded or Failed: its owner no longer waits for it

    @property
    def pending(self) -> bool:
        return self.node is None and not self.terminating and not self.ended


@dataclass(slots=True)
class Promise:
    """A free home promised to one pending rankless pod (behaviour.md "Admission")."""

    expires: float
    pod: str | None = None  # the pod's UID once the watch has seen it: then it never expires


@dataclass(slots=True)
class MemoryIndex:
    owners: dict[str, OwnerMemory] = field(default_factory=dict)
    live: dict[str, LivePod] = field(default_factory=dict)  # pod uid -> tracked pod
    live_by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> pod uids
    # owner key -> its live pods that have not ended nor begun terminating / of those, not bound:
    # read on every admission (claimed homes), so counted as pods come and go
    active_count: Counter[str] = field(default_factory=Counter)
    pending_counts: Counter[str] = field(default_factory=Counter)
    occupants: dict[str, set[str]] = field(default_factory=dict)  # node -> accelerator pods of any workload
    pod_node: dict[str, str] = field(default_factory=dict)  # accelerator pod uid -> its node
    pod_load: dict[str, Load] = field(default_factory=dict)  # accelerator pod uid -> what it holds
    node_used: dict[str, int] = field(default_factory=dict)  # node -> accelerators its pods hold
    bursts: dict[str, Burst] = field(default_factory=dict)  # owner key -> its latest admission burst
    waiting: Waiting = field(default_factory=Waiting)  # accelerator pods not bound yet, any workload
    load_priorities: Counter[int] = field(default_factory=Counter)  # priority -> bound accelerator pods
    owner_priorities: dict[str, Counter[int]] = field(default_factory=dict)  # owner key -> its bound pods' priorities
    eviction: EvictionView = field(default_factory=EvictionView)  # who alone holds each node, kept by occupy()
    room: RoomView = field(default_factory=RoomView)  # free accelerators per node, kept by occupy()
    promises: dict[str, dict[str, Promise]] = field(default_factory=dict)  # owner key -> node -> promise
    # (namespace, image) -> node -> when it last ran: homing's own memory is read only within
    # the pod's namespace (behaviour.md "Beyond the home"); across namespaces only what kubelets report
    image_runs: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    vacant: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> owner key -> vacant since
    vacated_order: dict[str, float] = field(default_factory=dict)  # node -> latest vacancy, oldest first
    vacant_by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> nodes
    dirty: set[str] = field(default_factory=set)  # owners whose custom resource is behind
    sibling_runs: RunsKept = field(default_factory=RunsKept)  # the owners whose sibling walks are cached
    rank_count: int = 0
    max_ranks_per_owner: int = 8192  # keeps one owner's memory bounded
    _topologies: dict[Topology, Topology] = field(default_factory=dict)

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
        self.promises.pop(key, None)
        self.bursts.pop(key, None)
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
        changed = changes.record_bind(mem, rank, sys.intern(node), self._intern(topology), now, group, refresh)
        if len(mem.ranks) > self.max_ranks_per_owner:
            changes.drop_oldest_rank(mem)
        if len(mem.pool) > self.max_ranks_per_owner:
            del mem.pool[min(mem.pool, key=lambda n: (mem.pool[n].last_used, n))]
        self.rank_count += len(mem.ranks) - before
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
        if now - mem.seen_marked >= durable_every:
            mem.seen_marked = now
            self.dirty.add(key)

    def last_pod_gone(self, key: str, now: float) -> None:
        """The owner's last pod went: write lastSeen now, the moment TTL counts from."""
        mem = self.owners.get(key)
        if mem is not None:
            mem.last_seen = mem.seen_marked = max(mem.last_seen, now)
            self.dirty.add(key)

    # -- live pods ----------------------------------------------------------------
    def pod_seen(self, pod_uid: str, pod: LivePod) -> None:
        old = self.live.get(pod_uid)
        if old is not None and old.owner_key != pod.owner_key:
            self.pod_gone(pod_uid)
            old = None
        if old is not None:
            self._count(old, -1)
        self.live[pod_uid] = pod
        self._count(pod, 1)
        self.live_by_owner.setdefault(pod.owner_key, set()).add(pod_uid)

    def _count(self, pod: LivePod, step: int) -> None:
        for counts, counted in ((self.active_count, not (pod.ended or pod.terminating)), (self.pending_counts, pod.pending)):
            if counted:
                counts[pod.owner_key] += step
                if counts[pod.owner_key] <= 0:
                    del counts[pod.owner_key]

    def pod_gone(self, pod_uid: str) -> LivePod | None:
        pod = self.live.pop(pod_uid, None)
        if pod is not None:
            self._count(pod, -1)
            uids = self.live_by_owner.get(pod.owner_key)
            if uids is not None:
                uids.discard(pod_uid)
                if not uids:
                    del self.live_by_owner[pod.owner_key]
        return pod

    def occupied_nodes(self, key: str) -> set[str]:
        """Nodes where a live, not terminating pod of the owner is bound."""
        nodes: set[str] = set()
        for uid in self.live_by_owner.get(key, ()):
            pod = self.live[uid]
            if pod.node and not pod.terminating:
                nodes.add(pod.node)
        return nodes

    def has_live_pods(self, key: str) -> bool:
        return bool(self.live_by_owner.get(key))

    def active(self, key: str) -> bool:
        """Some pod of the owner exists and has neither ended nor begun terminating."""
        return self.active_count.get(key, 0) > 0

    def pending_count(self, key: str) -> int:
        return self.pending_counts.get(key, 0)

    # -- node occupancy by any workload's accelerator pods (behaviour.md "Admission" outcome, "Beyond the home") ----------
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

    def burst(self, key: str, now: float) -> Burst:
        """A copy of the owner's current burst counting one more pod (a new one after a pause)."""
        held = self.bursts.get(key)
        if held is None or now - held.last > BURST_SECONDS:
            return Burst(last=now, count=1)
        return Burst(last=now, count=held.count + 1, victim=held.victim, used=set(held.used), sent=held.sent)

    def occupied_by_others(self, node: str, pod_uid: str) -> bool:
        return bool(self.occupants.get(node, set()) - {pod_uid})

    # -- where images ran, any owner (behaviour.md "Beyond the home") ---------------------------------------
    def ran_images(self, images: tuple[str, ...], node: str, now: float, namespace: str = "") -> None:
        for image in images:
            nodes = self.image_runs.setdefault((namespace, image), {})
            nodes.pop(node, None)
            nodes[node] = now  # oldest first: the bound drops the least recent
            if len(nodes) > MAX_NODES_PER_IMAGE:
                del nodes[next(iter(nodes))]

    def ran_here(self, images: tuple[str, ...], node: str, namespace: str = "") -> bool:
        return bool(images) and all(node in self.image_runs.get((namespace, image), ()) for image in images)

    def warm_nodes(self, images: tuple[str, ...], namespace: str = "") -> list[str]:
        """Nodes where every one of `images` ran in `namespace`, most recent first."""
        if not images:
            return []
        runs = [self.image_runs.get((namespace, image), {}) for image in images]
        first, rest = runs[0], runs[1:]
        when = {n: min([t, *(r[n] for r in rest)]) for n, t in first.items() if all(n in r for r in rest)}
        return sorted(when, key=lambda n: (-when[n], n))

    # -- vacant homes, any owner (behaviour.md "Beyond the home") ---------------------------------------------
    def vacate(self, node: str, key: str, now: float) -> None:
        """The owner's home on `node` has no live pod of it any more."""
        self.vacant.setdefault(node, {})[key] = now
        self.vacant_by_owner.setdefault(key, set()).add(node)
        self.vacated_order.pop(node, None)
        self.vacated_order[node] = now

    def reoccupy(self, node: str, key: str) -> None:
        owners = self.vacant.get(node)
        if owners is None or owners.pop(key, None) is None:
            return
        nodes = self.vacant_by_owner[key]
        nodes.discard(node)
        if not nodes:
            del self.vacant_by_owner[key]
        if not owners:
            del self.vacant[node]
            del self.vacated_order[node]

    def vacant_homes(self, skip_owner: str | None = None) -> Iterator[str]:
        """Nodes that are some owner's vacant home, most recently vacated first; a node
        vacant only for `skip_owner` is left out (the caller prefers those itself)."""
        return (node for node in reversed(self.vacated_order) if self.is_vacant_home(node, skip_owner))

    def is_vacant_home(self, node: str, skip_owner: str | None = None) -> bool:
        return any(self._still_home(node, k) for k in self.vacant.get(node, ()) if k != skip_owner)

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

    # -- rankless promises (behaviour.md "Admission") -------------------------------------------------
    def promise(self, key: str, node: str, now: float, lasts: float) -> None:
        self.promises.setdefault(key, {})[node] = Promise(expires=now + lasts)

    def claim_promise(self, key: str, node: str, pod_uid: str, now: float) -> None:
        """The pending pod carrying the promise of `node` was seen: it keeps the promise
        however long it waits (also after a restart, which rebuilds promises this way)."""
        nodes = self.promises.setdefault(key, {})
        held = nodes.get(node)
        if held is None or held.pod is None:  # held by another pod: that one keeps it
            nodes[node] = Promise(expires=now, pod=pod_uid)

    def promised_nodes(self, key: str, now: float) -> set[str]:
        return {node for node, p in self.promises.get(key, {}).items() if p.pod is not None or p.expires > now}

    def release_promise(self, key: str, node: str, pod_uid: str | None = None) -> None:
        """Ends the promise of `node` when it is unheld or held by `pod_uid`."""
        nodes = self.promises.get(key)
        if nodes is None:
            return
        held = nodes.get(node)
        if held is not None and held.pod in (None, pod_uid):
            del nodes[node]
        if not nodes:
            del self.promises[key]

    def drop_expired_promises(self, now: float) -> None:
        for key in list(self.promises):
            nodes = self.promises[key]
            for node in [n for n, p in nodes.items() if p.pod is None and p.expires <= now]:
                del nodes[node]
            if not nodes:
                del self.promises[key]

    # -- forgetting (behaviour.md "Memory": TTL and size bound) ----------------------------------------
    def expired(self, now: float, ttl: float) -> list[str]:
        """Owners with no live pods and nothing seen for `ttl` seconds."""
        return sorted(
            key for key, mem in self.owners.items() if now - mem.last_seen >= ttl and not self.has_live_pods(key)
        )

    def over_bound(self, max_ranks: int) -> list[str]:
        """Least recently seen owners to forget until at most `max_ranks` ranks remain."""
        excess = self.rank_count - max_ranks
        if excess <= 0:
            return []
        victims: list[str] = []
        for mem in sorted(self.owners.values(), key=lambda m: (m.last_seen, m.owner.key)):
            if excess <= 0:
                break
            if not mem.ranks:
                continue  # forgetting a pool-only owner frees no ranks
            victims.append(mem.owner.key)
            excess -= len(mem.ranks)
        return victims

    def drop_expired_faults(self, now: float, keep_for: float) -> None:
        for mem in self.owners.values():
            self._changed(mem, changes.drop_expired_faults(mem, now, keep_for))
