"""The in-memory index the webhook reads: every owner's memory, the live pods, and
the promises made to pending rankless pods. The operator feeds it; the custom
resources are its durable mirror. All methods are synchronous and take `now`."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from homing.engine.memory import rules
from homing.engine.memory.entries import OwnerMemory, Topology
from homing.engine.model import OwnerRef


@dataclass(slots=True)
class LivePod:
    owner_uid: str
    rank: str | None
    node: str | None
    terminating: bool = False


@dataclass(slots=True)
class MemoryIndex:
    owners: dict[str, OwnerMemory] = field(default_factory=dict)
    live: dict[str, LivePod] = field(default_factory=dict)  # pod uid -> pod
    live_by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner uid -> pod uids
    promises: dict[str, dict[str, float]] = field(default_factory=dict)  # owner -> node -> expiry
    dirty: set[str] = field(default_factory=set)  # owners whose custom resource is behind
    rank_count: int = 0
    max_ranks_per_owner: int = 8192  # keeps one PlacementMemory under etcd's object limit
    _topologies: dict[Topology, Topology] = field(default_factory=dict)

    # -- owners ---------------------------------------------------------------
    def owner(self, uid: str) -> OwnerMemory | None:
        return self.owners.get(uid)

    def ensure(self, owner: OwnerRef, now: float) -> OwnerMemory:
        mem = self.owners.get(owner.uid)
        if mem is None:
            mem = self.owners[owner.uid] = OwnerMemory(owner=owner, last_seen=now)
        return mem

    def adopt(self, mem: OwnerMemory) -> None:
        """Take a memory loaded from its custom resource (start-up)."""
        old = self.owners.get(mem.owner.uid)
        if old is not None:
            self.rank_count -= len(old.ranks)
        for entry in mem.ranks.values():
            entry.node = sys.intern(entry.node)
            entry.topology = self._intern(entry.topology)
        self.owners[mem.owner.uid] = mem
        self.rank_count += len(mem.ranks)

    def forget(self, uid: str) -> OwnerMemory | None:
        mem = self.owners.pop(uid, None)
        if mem is not None:
            self.rank_count -= len(mem.ranks)
        self.promises.pop(uid, None)
        self.dirty.discard(uid)
        return mem

    def _intern(self, topology: Topology) -> Topology:
        # Thousands of ranks share a few topology paths: keep one tuple of each.
        return self._topologies.setdefault(topology, topology)

    def _changed(self, mem: OwnerMemory, changed: bool) -> bool:
        if changed:
            self.dirty.add(mem.owner.uid)
        return changed

    # -- lifecycle (SPEC 2) -----------------------------------------------------
    def record_bind(
        self, owner: OwnerRef, rank: str | None, node: str, topology: Topology, now: float, group: str | None = None
    ) -> bool:
        mem = self.ensure(owner, now)
        before = len(mem.ranks)
        changed = rules.record_bind(mem, rank, sys.intern(node), self._intern(topology), now, group)
        if len(mem.ranks) > self.max_ranks_per_owner:
            rules.drop_oldest_rank(mem)
        if len(mem.pool) > self.max_ranks_per_owner:
            del mem.pool[min(mem.pool, key=lambda n: (mem.pool[n].last_used, n))]
        self.rank_count += len(mem.ranks) - before
        self.release_promise(owner.uid, node)
        return self._changed(mem, changed)

    def mark_warm(self, owner: OwnerRef, rank: str | None, node: str, now: float) -> bool:
        mem = self.ensure(owner, now)
        return self._changed(mem, rules.mark_warm(mem, rank, sys.intern(node), now))

    def record_fault(self, owner_uid: str, rank: str, node: str, now: float, keep_for: float) -> bool:
        mem = self.owners.get(owner_uid)
        if mem is None:
            return False
        return self._changed(mem, rules.record_fault(mem, rank, sys.intern(node), now, keep_for))

    def touch(self, owner_uid: str, now: float) -> None:
        mem = self.owners.get(owner_uid)
        if mem is not None:
            mem.last_seen = now

    # -- live pods ----------------------------------------------------------------
    def pod_seen(self, pod_uid: str, pod: LivePod) -> None:
        self.live[pod_uid] = pod
        self.live_by_owner.setdefault(pod.owner_uid, set()).add(pod_uid)

    def pod_gone(self, pod_uid: str) -> LivePod | None:
        pod = self.live.pop(pod_uid, None)
        if pod is not None:
            uids = self.live_by_owner.get(pod.owner_uid)
            if uids is not None:
                uids.discard(pod_uid)
                if not uids:
                    del self.live_by_owner[pod.owner_uid]
        return pod

    def occupied_nodes(self, owner_uid: str) -> set[str]:
        """Nodes where a live, not terminating pod of the owner is bound."""
        nodes: set[str] = set()
        for uid in self.live_by_owner.get(owner_uid, ()):
            pod = self.live[uid]
            if pod.node and not pod.terminating:
                nodes.add(pod.node)
        return nodes

    def has_live_pods(self, owner_uid: str) -> bool:
        return bool(self.live_by_owner.get(owner_uid))

    # -- rankless promises (SPEC 3) -------------------------------------------------
    def promise(self, owner_uid: str, node: str, now: float, lasts: float) -> None:
        self.promises.setdefault(owner_uid, {})[node] = now + lasts

    def promised_nodes(self, owner_uid: str, now: float) -> set[str]:
        return {node for node, until in self.promises.get(owner_uid, {}).items() if until > now}

    def release_promise(self, owner_uid: str, node: str) -> None:
        nodes = self.promises.get(owner_uid)
        if nodes is not None:
            nodes.pop(node, None)
            if not nodes:
                del self.promises[owner_uid]

    # -- forgetting (SPEC 2: TTL and size bound) ----------------------------------------
    def expired(self, now: float, ttl: float) -> list[str]:
        """Owners with no live pods and nothing seen for `ttl` seconds."""
        return sorted(
            uid
            for uid, mem in self.owners.items()
            if now - mem.last_seen >= ttl and not self.has_live_pods(uid)
        )

    def over_bound(self, max_ranks: int) -> list[str]:
        """Least recently seen owners to forget until at most `max_ranks` ranks remain."""
        excess = self.rank_count - max_ranks
        if excess <= 0:
            return []
        victims: list[str] = []
        for mem in sorted(self.owners.values(), key=lambda m: (m.last_seen, m.owner.uid)):
            if excess <= 0:
                break
            if not mem.ranks:
                continue  # forgetting a pool-only owner frees no ranks
            victims.append(mem.owner.uid)
            excess -= len(mem.ranks)
        return victims

    def drop_expired_faults(self, now: float, keep_for: float) -> None:
        for mem in self.owners.values():
            self._changed(mem, rules.drop_expired_faults(mem, now, keep_for))
