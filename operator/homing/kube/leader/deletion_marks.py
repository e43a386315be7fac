"""The leader's loop that keeps the scale-in marks (engine/replicas/deletion_cost.py) in line with
the claimed homes: at most `max_patches_per_second` pod patches, each against the
resourceVersion it was computed from, so a user's cost written meanwhile is never
overwritten (the API server answers 409 and the next pass sees the user's value). Nothing
is written before start-up has rebuilt the claims (PodObserver.rebuild_claims): a new
leader that judged the marks against no claims would remove every one that is correct. Nor
before the pod-patch guard's self-check (patch_guard.py) has a verdict: on an API server with
no ValidatingAdmissionPolicy nothing would hold homing's patches, and the marks stay off."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from homing.config import Settings
from homing.engine.placement.claimed import claimants_by_node
from homing.engine.replicas.deletion_cost import ANNOTATION, Mark, is_mark, marks
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.kube.leader import patch_guard
from homing.kube.leader.patch_guard import Verdict
from homing.kube.runtime import Runtime
from homing.kube.signals import logs, metrics

log = logs.get("homing.deletion_cost")


class DeletionMarks:
    def __init__(self, kube: Kube, rt: Runtime, settings: Settings, leading: Callable[[], bool]) -> None:
        self.kube, self.rt, self.settings, self.leading = kube, rt, settings, leading
        self.sent: dict[str, tuple[str, str | None]] = {}  # uid -> (resourceVersion, value) last written
        self.order: list[str] = []  # the queue order the marks last followed (logged when it changes)
        self.waited = False  # said once that the marks wait for start-up's claims
        self.guard: Verdict | None = None  # the guard's last verdict, and when it was given
        self.guard_at = 0.0

    def due(self, now: float) -> list[Mark]:
        pods = self.rt.pods
        order = pods.queue_order()
        if order != self.order:
            self.order = order
            log.info("scheduler queue order", waiting=order[:50], owners=len(order))
        wanted = marks(pods.replicas.items(), claimants_by_node(self.rt.index, now), order,
                       self.settings.tenancy.shared_nodes)
        # a patch already sent for this version of the pod: wait for the watch to show it
        return [m for m in wanted if self.sent.get(m.uid) != (pods.versions.get(m.uid, ""), m.value)]

    async def once(self, now: float | None = None) -> int:
        """One pass; returns the patches written."""
        cfg = self.settings.deletion_cost
        pods = self.rt.pods
        metrics.DELETION_MARKED.set(sum(1 for r in pods.replicas.values() if is_mark(r.cost)))
        if not cfg.enabled or self.settings.mode == "observe" or not self.leading():  # observe-only writes nothing
            return 0
        if not pods.claims_known:  # start-up has not rebuilt the claims: every mark would look stale
            if not self.waited:
                log.info("deletion-cost marks wait for the claims to be rebuilt")
                self.waited = True
            return 0
        budget = max(1, int(cfg.max_patches_per_second * cfg.interval_seconds))
        written = 0
        now = time.time() if now is None else now
        due = self.due(now)
        if due and not await self.guarded(due[0], now):
            return 0
        for mark in due[:budget]:
            version = pods.versions.get(mark.uid, "")
            body = {"metadata": {"resourceVersion": version, "annotations": {ANNOTATION: mark.value}}}
            action = "set" if mark.value is not None else "cleared"
            try:
                await self.kube.request("PATCH", f"/api/v1/namespaces/{mark.namespace}/pods/{mark.name}",
                                        body=body, content_type=MERGE_PATCH, timeout=5)
            except (KubeError, OSError, TimeoutError) as err:
                status = getattr(err, "status", None)
                metrics.DELETION_MARKS.labels("failed").inc()
                if status not in (404, 409):  # gone or changed meanwhile: the next pass decides again
                    log.warning("deletion-cost mark not written", pod=mark.name, node=mark.node, error=str(err)[:200])
                continue
            self.sent[mark.uid] = (version, mark.value)
            written += 1
            metrics.DELETION_MARKS.labels(action).inc()
            log.info("deletion-cost mark " + action, pod=mark.name, node=mark.node, waiting=mark.claimant)
        for uid in [u for u in self.sent if u not in pods.replicas]:
            del self.sent[uid]
        return written

    async def guarded(self, probe: Mark, now: float) -> bool:
        """Whether marks may be written: asks the guard on the first replica due (its verdict
        is kept for `guard_check_seconds`, an unknown one only until the next pass)."""
        fresh = self.guard not in (None, Verdict.UNKNOWN) and now - self.guard_at < self.settings.deletion_cost.guard_check_seconds
        if not fresh:
            verdict = await patch_guard.check(self.kube, probe.namespace, probe.name)
            if verdict is not self.guard:
                say = log.info if verdict is Verdict.HOLDS else log.warning
                say("pod-patch guard " + verdict.value, probe=f"{probe.namespace}/{probe.name}",
                    **({"why": _WHY[verdict]} if verdict in _WHY else {}))
            self.guard, self.guard_at = verdict, now
            for v in Verdict:
                metrics.PATCH_GUARD.labels(v.value).set(1 if v is verdict else 0)
        return self.guard is not Verdict.NO_API

    async def forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.deletion_cost.interval_seconds)
            try:
                await self.once()
            except Exception:  # a pass that fails is tried again at the next interval
                log.exception("deletion-cost pass failed")



_WHY = {
    Verdict.MISSING: "a dry-run patch outside homing's band would have gone through: apply manifests/base/"
                     "pod-deletion-cost-policy.yaml (the policy and its binding); marks are written meanwhile",
    Verdict.NO_API: "this API server has no ValidatingAdmissionPolicy (Kubernetes 1.30+), so nothing holds homing's "
                    "pod patches to its band: deletion-cost marks are off",
}
