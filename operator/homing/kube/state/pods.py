"""The pod watch's adapter: scope, the pod's view, the lifecycle step (engine/memory/lifecycle.py),
and the effects it returns turned into logs, metrics and Events."""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from homing.config import Settings
from homing.engine.identity import resolve_owner
from homing.engine.identity.podview import PodView, placed_node, pod_view
from homing.engine.identity.pool_group import pool_group
from homing.engine.identity.scope import accelerator_resources
from homing.engine.memory import lifecycle
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import pod_load
from homing.engine.placement.decide import topology_of
from homing.engine.replicas.deletion_cost import ANNOTATION as DELETION_COST, Queued, Replica, queue_order, queued
from homing.kube.signals import logs, metrics
from homing.kube.signals.events import EventPoster
from homing.kube.state.cluster import ClusterState, never_raises

_log = logs.get("homing.memory")  # bound per pod event; resolved once, not per event
_WARNED_LIMIT = 100_000


class PodObserver:
    def __init__(
        self, settings: Settings, index: MemoryIndex, cluster: ClusterState, events: EventPoster | None = None
    ) -> None:
        self.settings, self.index, self.cluster, self.events = settings, index, cluster, events
        lt = settings.lifetimes
        self.policy = lifecycle.Policy(fault_memory=lt.fault_memory_seconds, durable_seen_every=lt.durable_seen_seconds)
        self._warned: set[str] = set()
        self.replicas: dict[str, Replica] = {}  # uid -> bound ReplicaSet replica (engine/replicas/deletion_cost.py)
        self.versions: dict[str, str] = {}  # uid -> its resourceVersion: a mark is written against it
        self.queued: dict[str, Queued] = {}  # uid -> a pending accelerator pod's place in its scheduler's queue
        # The vacant homes, and so the claims, are whole: rebuilt at start-up from the loaded
        # memory and the first whole LIST of pods (rebuild_claims). Until then the scale-in
        # marks are not written: with no claims known, every correct mark would look stale.
        self.claims_known = False

    def tracked(self, pod: dict[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        label = (meta.get("labels") or {}).get(self.settings.scope.pod_label)
        if label == "false":
            return False
        if meta.get("namespace") not in self.cluster.opted_in and not (label == "true" and self.settings.scope.pod_opt_in):
            return False
        return bool(accelerator_resources(pod, self.settings.scope.resource_prefixes))

    @never_raises
    def observe(self, event: str | None, pod: dict[str, Any], now: float | None = None) -> None:
        now = time.time() if now is None else now
        uid = (pod.get("metadata") or {}).get("uid")
        if not uid:
            return
        self._occupy(event, uid, pod)
        view = pod_view(pod, self.cluster.workloads, self.settings.bounds.max_rank_part) if self.tracked(pod) else None
        self._replica(event, uid, pod, view)
        if view is None:
            lifecycle.untracked(self.index, uid, now)  # orphaned or opted out: not a live pod any more
            return
        rank = view.rank.rank.key if view.rank.rank else None
        log = _log.bind(owner=view.owner.display, rank=rank, pod=view.name, node=view.node)
        self._warn_bad_rank(pod, view, log)
        # A rank's Volcano sub-group (HyperNode jobs), or a rankless pod's pool group (behaviour.md "Identity").
        group = (self._group(pod, view.node) if rank else pool_group(pod)) if view.node else None
        for effect in lifecycle.observe(self.index, event, view, self.cluster.snapshot, now, self.policy, group):
            self._report(effect, pod, view, log)

    def _replica(self, event: str | None, uid: str, pod: dict[str, Any], view: PodView | None) -> None:
        """A live bound pod of a ReplicaSet: a candidate for the scale-in mark."""
        meta = pod.get("metadata") or {}
        controller = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
        if (event == lifecycle.DELETED or view is None or not view.node or view.ended or view.terminating
                or (controller or {}).get("kind") != "ReplicaSet"):
            self.replicas.pop(uid, None)
            self.versions.pop(uid, None)
            return
        cost = (meta.get("annotations") or {}).get(DELETION_COST)
        self.replicas[uid] = Replica(view.namespace, view.name, view.owner.key, view.node, cost)
        self.versions[uid] = meta.get("resourceVersion") or ""

    @never_raises
    def relisted(self, uids: Iterable[str], now: float | None = None) -> None:
        keep = set(uids)
        for uid in [u for u in self.replicas if u not in keep]:
            self.replicas.pop(uid, None)
            self.versions.pop(uid, None)
        for uid in [u for u in self.queued if u not in keep]:
            del self.queued[uid]
        gone = lifecycle.relisted(self.index, keep, time.time() if now is None else now)
        if gone:
            _log.info("pods missing from the re-list treated as deleted", pods=len(gone))

    def rebuild_claims(self, now: float | None = None) -> int:
        """Start-up, after the memory is loaded and the pods listed whole: every home no live
        pod of its owner holds is vacant (engine/memory/lifecycle.py rebuild_vacancies), and
        from then on the watch keeps it so. Returns how many homes were found vacant."""
        found = lifecycle.rebuild_vacancies(self.index, time.time() if now is None else now)
        self.claims_known = True
        return found

    def queue_order(self) -> list[str]:
        """Owners with pending pods in their scheduler's order, from the pod groups as they are now."""
        return queue_order(self.queued.values(), self.cluster.podgroups)

    def _occupy(self, event: str | None, uid: str, pod: dict[str, Any]) -> None:
        """Which node each accelerator pod of any workload sits on, and what it holds there
        (the outcome's home-busy; behaviour.md "Beyond the home" free nodes and victims), or what it waits for.
        A pod that names a node it does not hold (behaviour.md "Tenants") does neither: it
        holds nothing there and no scheduler will place it."""
        status = (pod.get("status") or {}).get("phase")
        named = (pod.get("spec") or {}).get("nodeName")
        node = placed_node(pod) or (named if uid in self.index.pod_node else None)  # once held, held while it lives
        unplaced = node is None and bool(named)
        alive = event != lifecycle.DELETED and status not in ("Succeeded", "Failed")
        prefixes = tuple(self.settings.scope.resource_prefixes)
        index = self.index
        if unplaced or not (alive and accelerator_resources(pod, prefixes)):
            index.occupy(uid, None)
            index.waiting.wait(uid, None)
            self.queued.pop(uid, None)
            return
        owner = resolve_owner(pod, self.cluster.workloads)
        meta = pod.get("metadata") or {}
        key = owner.key if owner is not None else f"{meta.get('namespace')}/pod:{uid}"  # a bare pod is its own workload
        load = pod_load(pod, key, prefixes)
        if uid not in index.pod_node and uid not in index.waiting.pending:
            index.waiting.arrived(key)  # one admission of the owner is no longer in flight
        index.occupy(uid, node or None, load)
        index.waiting.wait(uid, None if node else load)
        if node:
            self.queued.pop(uid, None)
        else:
            self.queued[uid] = queued(pod, key, load.priority)

    def _group(self, pod: dict[str, Any], node: str) -> str | None:
        c = self.cluster
        return topology_of(pod, c.podgroups, c.snapshot, self.settings, [node]).group

    def _report(self, effect: lifecycle.Effect, pod: dict[str, Any], view: PodView, log: Any) -> None:
        match effect:
            case lifecycle.Remembered(moved_from=moved_from):
                log.info("bound: remembered", previous_node=moved_from)
            case lifecycle.Warmed():
                log.info("running: node is warm")
            case lifecycle.Faulted(reason=reason):
                log.warning("pod ended on a faulty node: avoiding it", reason=reason)
            case lifecycle.Placed(home=home, node=node, outcome=outcome, image_warm=warm):
                metrics.PLACEMENTS.labels(outcome.result, outcome.reason, view.owner.namespace, view.owner.kind).inc()
                log.info("placement outcome", home=home, outcome=outcome.result, why=outcome.reason, image_warm=warm)
                if outcome.result == "home":
                    self._post(pod, "ReturnedHome", f"bound to its home node {node}")
                else:
                    warm_note = ", a node that holds its images" if warm else ""
                    message = f"bound to {node}{warm_note}, home was {home} ({outcome.result}: {outcome.reason})"
                    self._post(pod, "PlacedAwayFromHome", message)
            case lifecycle.PlacedWarm(node=node):
                metrics.PREFERRED_PLACEMENTS.labels("image-warm").inc()
                log.info("placement outcome", outcome="image-warm")
                self._post(pod, "PlacedOnWarmNode", f"bound to {node}, which holds its images (image-warm)")

    def _post(self, pod: dict[str, Any], reason: str, message: str) -> None:
        if self.events:
            self.events.post(pod, "Normal", reason, message)

    def _warn_bad_rank(self, pod: dict[str, Any], view: PodView, log: Any) -> None:
        if not view.rank.warning or view.uid in self._warned:
            return
        if len(self._warned) >= _WARNED_LIMIT:
            self._warned.clear()
        self._warned.add(view.uid)
        log.warning("invalid rank", detail=view.rank.warning)
        if self.events:
            self.events.post(pod, "Warning", "InvalidRank", view.rank.warning)
