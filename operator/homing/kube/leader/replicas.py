"""Several replicas (behaviour.md "Operation"), the adapter over coordination.k8s.io Leases:
- the leader Lease elects the one replica that writes PlacementMemory, sweeps, posts
  Events, rotates certificates and writes the webhook configuration
  (engine/replicas/leadership.py decides, this file reads and writes);
- each replica's member Lease says it is alive; the live members split every rankless
  pool among themselves (engine/replicas/shares.py), so two replicas never promise one node.
Every replica watches the cluster and serves admissions whether it leads or not.

One loop, every retry period: renew our member Lease, read the others, then one step of
the election. A failing API server only makes leadership and our share lapse on time."""
from __future__ import annotations

import asyncio
import datetime
import os
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from homing.config import Settings
from homing.engine.replicas import leadership
from homing.engine.replicas.shares import MemberLease, Membership
from homing.kube.client import Kube, KubeError
from homing.kube.signals import logs, metrics

log = logs.get("homing.replicas")

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
MEMBER_LABEL = "homing.io/member-of"  # value: the leader Lease's name; one install's replicas share it
FORGET_MEMBER_AFTER = 20  # lease durations: a member Lease this stale is deleted by the leader


def default_identity() -> str:
    """The pod's name: unique while the pod lives, and the same for a restarted container,
    whose predecessor is surely gone, so it takes its Leases back without waiting. Outside
    a pod, the host name and a random suffix."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") and os.environ.get("HOSTNAME"):
        return os.environ["HOSTNAME"]
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _micro_time() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dns_name(text: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")[:253]


class Replicas:
    def __init__(
        self,
        kube: Kube,
        settings: Settings,
        on_elected: Callable[[], Awaitable[None]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        r = settings.replicas
        self.kube, self.clock, self.on_elected = kube, clock, on_elected
        self.identity = r.identity or default_identity()
        self.namespace = r.namespace or settings.webhook.service_namespace
        self.lease_name = r.lease_name
        self.member_name = _dns_name(r.member_prefix + self.identity)
        self.timings = leadership.Timings(r.lease_seconds, r.renew_seconds, r.retry_seconds)
        self.election = leadership.State(me=self.identity, timings=self.timings)
        self.members = Membership(self.identity, r.lease_seconds, r.renew_seconds, r.handover_grace_seconds)
        self.stopping = False
        self._was_leading = False
        self._member_version: str | None = None

    # -- what the rest of the operator asks ------------------------------------------------
    @property
    def leading(self) -> bool:
        return not self.stopping and self.election.leading(self.clock())

    def may_promise(self, owner_key: str, node: str) -> bool:
        return not self.stopping and self.members.may_promise(owner_key, node, self.clock())

    # -- the loop ---------------------------------------------------------------------------
    async def forever(self) -> None:
        while True:
            started = self.clock()
            await self.once()
            await asyncio.sleep(max(0.0, self.timings.retry - (self.clock() - started)))

    async def once(self) -> None:
        for part in (self._renew_member, self._observe_members, self._elect):
            try:
                await part()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the API server away: leadership and shares lapse on time
                log.warning("lease step failed", step=part.__name__, error=f"{type(err).__name__}: {err}"[:300])
        await self._transition()

    async def _renew_member(self) -> None:
        sent = self.clock()
        body = self._lease_body(self.member_name, self.identity, {MEMBER_LABEL: self.lease_name})
        try:
            self._member_version = await self._write(body, self._member_version)
        except KubeError as err:
            if err.status in (404, 409):  # deleted or written meanwhile: create or re-read next round
                self._member_version = None
            raise
        self.members.renewed(sent)

    async def _observe_members(self) -> None:
        got = await self.kube.request("GET", LEASES.format(ns=self.namespace),
                                      query=[("labelSelector", f"{MEMBER_LABEL}={self.lease_name}")])
        leases = []
        for item in got.get("items") or []:
            holder = (item.get("spec") or {}).get("holderIdentity")
            if holder:
                leases.append(MemberLease(holder, (item.get("metadata") or {}).get("resourceVersion") or ""))
        live = self.members.observe(leases, self.clock())
        metrics.REPLICAS_LIVE.set(len(live))
        if self.leading:
            await self._forget_stale_members(got.get("items") or [])

    async def _elect(self) -> None:
        path = f"{LEASES.format(ns=self.namespace)}/{self.lease_name}"
        current: dict[str, Any] | None
        try:
            current = await self.kube.request("GET", path)
        except KubeError as err:
            if err.status != 404:
                raise
            current = None
        view = None
        if current is not None:
            meta, spec = current.get("metadata") or {}, current.get("spec") or {}
            view = leadership.LeaseView(spec.get("holderIdentity") or None, meta.get("resourceVersion") or "")
        now = self.clock()
        self.election, action = leadership.step(self.election, view, now)
        if action is leadership.Action.WAIT:
            return
        body = self._lease_body(self.lease_name, self.identity, {})
        spec = body["spec"]
        old = (current or {}).get("spec") or {}
        spec["acquireTime"] = old.get("acquireTime") if action is leadership.Action.RENEW else spec["renewTime"]
        spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + (action is leadership.Action.ACQUIRE)
        version = (current or {}).get("metadata", {}).get("resourceVersion")
        try:
            written = await self._write(body, version)
        except KubeError as err:
            if err.status == 409:  # someone else wrote first: read again next round
                self.election = leadership.failed(self.election)
                return
            raise
        self.election = leadership.succeeded(self.election, action, written, now)

    async def _transition(self) -> None:
        leading = self.leading
        if leading != self._was_leading:
            self._was_leading = leading
            log.info("leadership changed", leading=leading, identity=self.identity)
            if leading:
                metrics.TAKEOVERS.inc()
                await self._elected()
        metrics.LEADER.set(1 if leading else 0)  # after the take-over writes: "leading" means caught up

    async def _elected(self) -> None:
        if self.on_elected is None:
            return
        try:
            await self.on_elected()
        except Exception as err:
            log.warning("take-over step failed; the loops carry on", error=f"{type(err).__name__}: {err}"[:300])

    # -- Lease I/O --------------------------------------------------------------------------
    def _lease_body(self, name: str, holder: str | None, labels: dict[str, str]) -> dict[str, Any]:
        now = _micro_time()
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {"app.kubernetes.io/name": "homing", **labels}},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": max(1, round(self.timings.lease)),
                "acquireTime": now,
                "renewTime": now,
            },
        }

    async def _write(self, body: dict[str, Any], version: str | None) -> str:
        """Create, or replace at `version` (a conflict raises 409); returns the new version."""
        collection = LEASES.format(ns=self.namespace)
        if version is None:
            try:
                got = await self.kube.request("POST", collection, body=body)
                created: str = got["metadata"]["resourceVersion"]
                return created
            except KubeError as err:
                if err.status != 409 or body["metadata"]["name"] != self.member_name:
                    raise
                current = await self.kube.request("GET", f"{collection}/{self.member_name}")  # ours from before
                version = current["metadata"]["resourceVersion"]
        body["metadata"]["resourceVersion"] = version
        got = await self.kube.request("PUT", f"{collection}/{body['metadata']['name']}", body=body)
        replaced: str = got["metadata"]["resourceVersion"]
        return replaced

    async def _forget_stale_members(self, items: list[dict[str, Any]]) -> None:
        """Member Leases of replicas long gone (killed, never released) are deleted by the leader."""
        now = self.clock()
        for item in items:
            holder = (item.get("spec") or {}).get("holderIdentity")
            seen = self.members.seen.get(holder or "")
            if holder == self.identity or seen is None or now - seen[1] < FORGET_MEMBER_AFTER * self.timings.lease:
                continue
            name = item["metadata"]["name"]
            try:
                await self.kube.request("DELETE", f"{LEASES.format(ns=self.namespace)}/{name}")
            except KubeError as err:
                if err.status != 404:
                    raise

    async def release(self) -> None:
        """A graceful stop: stop promising and leading, then free both Leases at once, so a
        standby takes over without waiting out the lease."""
        self.stopping = True
        metrics.LEADER.set(0)
        collection = LEASES.format(ns=self.namespace)
        try:
            await self.kube.request("DELETE", f"{collection}/{self.member_name}")
        except Exception as err:
            log.warning("member lease not released", error=str(err)[:200])
        if self.election.renewed_at is None:
            return
        try:
            current = await self.kube.request("GET", f"{collection}/{self.lease_name}")
            if (current.get("spec") or {}).get("holderIdentity") == self.identity:
                current["spec"].update({"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": _micro_time()})
                await self.kube.request("PUT", f"{collection}/{self.lease_name}", body=current)
                log.info("leadership released", identity=self.identity)
        except Exception as err:
            log.warning("leader lease not released; a standby takes over when it expires", error=str(err)[:200])
