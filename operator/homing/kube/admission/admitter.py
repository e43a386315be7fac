"""The webhook's side: decide from the in-memory index only (no API call), leave what the
admission leaves in it (engine/placement/admitted.py), and never raise: an internal error
admits the pod unpatched (behaviour.md "Admission")."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.tenancy import seen_from
from homing.engine.placement.admitted import admitted, apply
from homing.engine.placement.decide import Decision, decide
from homing.kube.signals import logs, metrics
from homing.kube.state.cluster import ClusterState

log = logs.get("homing.admission")


class Admitter:
    def __init__(self, settings: Settings, index: MemoryIndex, cluster: ClusterState) -> None:
        self.settings, self.index, self.cluster = settings, index, cluster
        self.may_promise: Callable[[str, str], bool] | None = None  # several replicas: this one's share (replicas.py)

    def admit(self, pod: dict[str, Any], dryrun: bool, now: float | None = None) -> tuple[Decision, list[dict[str, Any]]]:
        """The decision and its JSON patch; on any internal error, no patch."""
        started = time.perf_counter()
        now = time.time() if now is None else now
        try:
            decision = self._decide(pod, dryrun, now)
            ops = decision.patch(pod, observe=self.settings.mode == "observe")
        except Exception as err:
            log.exception("admission decision failed; pod admitted unchanged")
            decision, ops = Decision(outcome="error", reason=f"internal error: {type(err).__name__}"), []
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
                **({"displace": decision.victim} if decision.victim else {}),  # the burst's agreed victim (behaviour.md "Beyond the home")
            )
        return decision, ops

    def _decide(self, pod: dict[str, Any], dryrun: bool, now: float) -> Decision:
        c = self.cluster
        # The memory as the pod's namespace sees it (behaviour.md "Tenants"): other namespaces'
        # claims, vacant homes and workloads steer it only where tenants share nodes.
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        seen = seen_from(self.index, namespace, self.settings.tenancy.shared_nodes)
        decision = decide(pod, seen, c.workloads, c.snapshot, self.settings, now, c.podgroups, self.may_promise)
        left = None if dryrun else admitted(decision, pod, self.settings, now)  # a dry run leaves nothing
        if left is not None:
            apply(self.index, left)
        return decision
