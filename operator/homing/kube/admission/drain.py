"""A graceful stop without unanswered admissions (behaviour.md "Operation"). The API server keeps its
connections to a webhook open and reuses them, and a Service (kube-proxy) keeps an
established connection on the pod it chose, so even after the endpoint is gone some
reviews still arrive here. The pod's preStop hook asks GET /drain on the readiness port:
the replica turns unready and answers every review with `Connection: close` (each
connection is dropped by the client after its answer and reopened towards a replica that
stays); the hook returns after `health.drain_seconds`, and the kubelet's SIGTERM then stops
kopf its own way: the leader's last flush and the release of its Leases follow."""
from __future__ import annotations

import asyncio

from homing.kube.signals import logs, metrics

log = logs.get("homing.drain")


class Drain:
    def __init__(self) -> None:
        self.active = False

    async def run(self, seconds: float) -> None:
        """Returns once the drain is over; a second call (a retried hook) waits as long."""
        if not self.active:
            self.active = True
            metrics.READY.set(0)  # no new endpoints point here
            log.info("stopping: draining admissions before the operator stops", seconds=seconds)
        await asyncio.sleep(seconds)


current = Drain()
