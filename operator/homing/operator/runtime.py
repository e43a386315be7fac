"""Everything one operator process knows, and the glue from watch events to the engine.
Handlers call these methods; each takes plain dicts and never raises."""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import structlog

from homing.config import Settings
from homing.engine.admission import Decision, decide, topology_of
from homing.engine.identity import WorkloadIndex
from homing.engine.identity.owner import controller_ref
from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.model import Health
from homing.engine.outcome import classify
from homing.engine.podview import PodView, pod_view
from homing.engine.scope import accelerator_resources
from homing.engine.topology import mindcluster
from homing.engine.topology.sources import TopologySources
from homing.operator import logs, metrics
from homing.operator.events import EventPoster
from homing.operator.store import Store

log = logs.get("homing.runtime")

_WARNED_LIMIT = 100_000


def never_raises(method: Callable[..., Any]) -> Callable[..., Any]:
    """Bad input gets a warning, never an exception out of a handler."""

    @functools.wraps(method)
    def guarded(self: "Runtime", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception:
            log.exception("handler failed; input ignored", handler=method.__name__)
            return None

    return guarded


class Runtime:
    def __init__(self, settings: Settings, store: Store | None = None, events: EventPoster | None = None) -> None:
        self.settings = settings
        self.index = MemoryIndex(max_ranks_per_owner=settings.bounds.max_ranks_per_owner)
        self.workloads = WorkloadIndex()
        self.topology = TopologySources(settings)
        self.snapshot = self.topology.snapshot
        self.podgroups: dict[tuple[str, str], dict] = {}
        self.opted_in: set[str] = set()  # namespaces labelled for homing
        self.store = store
        self.events = events
        self._warned: set[str] = set()
        for warning in self.topology.warnings:
            log.warning("topology configuration", detail=warning)

    # -- scope --------------------------------------------------------------------------
    def tracked(self, pod: dict) -> bool:
        meta = pod.get("metadata") or {}
        label = (meta.get("labels") or {}).get(self.settings.scope.pod_label)
        if label == "false":
            return False
        if meta.get("namespace") not in self.opted_in and label != "true":
            return False
        return bool(accelerator_resources(pod, self.settings.scope.resource_prefixes))

    # -- cluster objects ------------------------------------------------------------------
    @never_raises
    def observe_namespace(self, event: str | None, ns: dict) -> None:
        meta = ns.get("metadata") or {}
        s = self.settings.scope
        if event != "DELETED" and (meta.get("labels") or {}).get(s.namespace_label) == s.namespace_label_value:
            self.opted_in.add(meta.get("name"))
        else:
            self.opted_in.discard(meta.get("name"))

    @never_raises
    def observe_replicaset(self, event: str | None, rs: dict) -> None:
        meta = rs.get("metadata") or {}
        if event == "DELETED":
            self.workloads.forget_replicaset(meta.get("uid"))
        elif meta.get("uid"):
            self.workloads.learn_replicaset(meta["uid"], controller_ref(meta, meta.get("namespace") or ""))

    @never_raises
    def observe_node(self, event: str | None, node: dict) -> None:
        name = (node.get("metadata") or {}).get("name")
        if not name:
            return
        if event == "DELETED":
            old, new = self.topology.node_deleted(name), None
            log.info("node gone; memories that name it keep it until they expire", node=name)
        else:
            old, new = self.topology.node_changed(node)
        self._count_health(old, new)

    def _count_health(self, old: Any, new: Any) -> None:
        if old is not None:
            metrics.NODES.labels(old.health.value).dec()
        if new is not None:
            metrics.NODES.labels(new.health.value).inc()
            if old is not None and old.health is not new.health:
                log.info("node health changed", node=new.name, health=new.health.value, was=old.health.value)

    @never_raises
    def observe_hypernode(self, event: str | None, hypernode: dict) -> None:
        for warning in self.topology.hypernode_changed(hypernode, deleted=event == "DELETED"):
            log.warning("HyperNode topology", detail=warning)

    @never_raises
    def observe_podgroup(self, event: str | None, podgroup: dict) -> None:
        """Only what job kinds read: labels, annotations, minMember and topology policies."""
        meta = podgroup.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        if event == "DELETED":
            self.podgroups.pop(key, None)
            return
        spec = podgroup.get("spec") or {}
        self.podgroups[key] = {
            "metadata": {"annotations": dict(meta.get("annotations") or {}), "labels": dict(meta.get("labels") or {})},
            "spec": {k: spec[k] for k in ("minMember", "networkTopology", "subGroupPolicy") if k in spec},
        }

    @never_raises
    def observe_nodeinfo(self, event: str | None, configmap: dict) -> None:
        """NodeD's verdict on a node (when the NodeD source is enabled)."""
        node = mindcluster.node_of(configmap, mindcluster.NODE_INFO_PREFIX)
        if node is None:
            return
        health = None
        if event != "DELETED":
            try:
                health = mindcluster.noded_health(configmap)
            except ValueError as bad:
                log.warning("NodeD ConfigMap ignored", node=node, detail=str(bad))
        old = self.snapshot.nodes.get(node)
        self.topology.noded_changed(node, health)
        self._count_health(old, self.snapshot.nodes.get(node))

    # -- pods -------------------------------------------------------------------------------
    @never_raises
    def observe_pod(self, event: str | None, pod: dict, now: float | None = None) -> None:
        if not self.tracked(pod):
            return
        now = time.time() if now is None else now
        view = pod_view(pod, self.workloads, self.settings.bounds.max_rank_part)
        if view is None:
            return
        rank = view.rank.rank.key if view.rank.rank else None
        bound = structlog.get_logger("homing.memory").bind(
            owner=view.owner.display, rank=rank, pod=view.name, node=view.node
        )
        self._warn_bad_rank(pod, view, bound)
        index = self.index
        if event == "DELETED":
            index.pod_gone(view.uid)
            self._record_fault(view, rank, now, bound)
            if view.home and not view.node:
                index.release_promise(view.owner.uid, view.home)
            index.touch(view.owner.uid, now)
            return
        before = index.live.get(view.uid)
        busy = index.occupied_nodes(view.owner.uid) - ({before.node} if before and before.node else set())
        index.pod_seen(view.uid, LivePod(view.owner.uid, rank, view.node, view.terminating))
        index.touch(view.owner.uid, now)
        if view.node and not view.terminating and not view.ended:
            group = topology_of(pod, self.podgroups, self.snapshot, self.settings, [view.node]).group if rank else None
            if index.record_bind(view.owner, rank, view.node, self.snapshot.topology(view.node), now, group):
                bound.info("bound: remembered")
            first_sighting = before is None or before.node is None
            if view.home and event is not None and first_sighting:
                self._account_outcome(pod, view, busy, bound)
            if view.running and index.mark_warm(view.owner, rank, view.node, now):
                bound.info("running: node is warm")
        if view.ended:
            self._record_fault(view, rank, now, bound)

    def _warn_bad_rank(self, pod: dict, view: PodView, bound: Any) -> None:
        if not view.rank.warning or view.uid in self._warned:
            return
        if len(self._warned) >= _WARNED_LIMIT:
            self._warned.clear()
        self._warned.add(view.uid)
        bound.warning("invalid rank", detail=view.rank.warning)
        if self.events:
            self.events.post(pod, "Warning", "InvalidRank", view.rank.warning)

    def _record_fault(self, view: PodView, rank: str | None, now: float, bound: Any) -> None:
        if rank is None or view.node is None:
            return
        unhealthy = self.snapshot.health(view.node) is Health.UNHEALTHY
        if not (unhealthy or view.fault_reason):
            return
        keep = self.settings.lifetimes.fault_memory_seconds
        if self.index.record_fault(view.owner.uid, rank, view.node, now, keep):
            bound.warning("pod ended on a faulty node: avoiding it", reason=view.fault_reason or "node-unhealthy")

    def _account_outcome(self, pod: dict, view: PodView, busy: set[str], bound: Any) -> None:
        assert view.home and view.node
        outcome = classify(view.home, view.node, self.snapshot, busy, view.domains)
        mem = self.index.owner(view.owner.uid)
        if mem is not None:
            stats = mem.stats
            setattr(stats, outcome.result, getattr(stats, outcome.result) + 1)
            self.index.dirty.add(view.owner.uid)
        metrics.PLACEMENTS.labels(outcome.result).inc()
        bound.info("placement outcome", home=view.home, outcome=outcome.result, why=outcome.reason)
        if self.events:
            if outcome.result == "home":
                self.events.post(pod, "Normal", "ReturnedHome", f"bound to its home node {view.node}")
            else:
                self.events.post(
                    pod,
                    "Normal",
                    "PlacedAwayFromHome",
                    f"bound to {view.node}, home was {view.home} ({outcome.result}: {outcome.reason})",
                )

    # -- admission ----------------------------------------------------------------------------
    def admit(self, pod: dict, dryrun: bool, now: float | None = None) -> Decision:
        """Never raises: an internal error admits the pod unpatched."""
        started = time.perf_counter()
        now = time.time() if now is None else now
        try:
            decision = decide(pod, self.index, self.workloads, self.snapshot, self.settings, now, self.podgroups)
            if decision.outcome != "skipped" and not dryrun:
                mem = self.index.owner(decision.owner_uid or "")
                if mem is not None:
                    mem.stats.admitted += 1
                    self.index.dirty.add(mem.owner.uid)
                if decision.promise and decision.owner_uid:
                    self.index.promise(
                        decision.owner_uid, decision.promise, now, self.settings.lifetimes.promise_seconds
                    )
        except Exception as err:
            log.exception("admission decision failed; pod admitted unchanged")
            decision = Decision(outcome="error", reason=f"internal error: {type(err).__name__}")
        elapsed = time.perf_counter() - started
        metrics.ADMISSIONS.labels(decision.outcome).inc()
        metrics.WEBHOOK_SECONDS.observe(elapsed)
        if elapsed > self.settings.webhook.deadline_seconds:
            log.warning("admission decision over its budget", seconds=round(elapsed, 4))
        if decision.outcome != "skipped":
            meta = pod.get("metadata") or {}
            log.info(
                "admitted",
                owner=decision.owner,
                rank=decision.rank,
                pod=meta.get("name") or meta.get("generateName"),
                node=decision.home,
                decision=decision.outcome,
                reason=decision.reason,
            )
        return decision

    # -- forgetting ----------------------------------------------------------------------------
    def forget_stale(self, now: float) -> list[OwnerMemory]:
        """Forget owners past their TTL, then the least recently seen over the size bound."""
        index, lifetimes = self.index, self.settings.lifetimes
        uids = index.expired(now, lifetimes.ttl_seconds)
        gone = [m for m in map(index.forget, uids) if m is not None]
        gone += [m for m in map(index.forget, index.over_bound(self.settings.bounds.max_ranks)) if m is not None]
        index.drop_expired_faults(now, lifetimes.fault_memory_seconds)
        return gone

    def refresh_gauges(self) -> None:
        metrics.MEMORY_OWNERS.set(len(self.index.owners))
        metrics.MEMORY_RANKS.set(self.index.rank_count)
