"""A graceful stop without unanswered admissions (behaviour.md "Operation"). The API server keeps its
connections to a webhook open and reuses them, and a Service (kube-proxy) keeps an
established connection on the pod it chose, so even after the endpoint is gone some
reviews still arrive here. On SIGTERM the replica turns unready, answers for a few more
seconds with `Connection: close` on every response (each connection is then dropped by
the client after its answer and reopened towards a replica that stays), and only then
lets kopf stop: the leader's last flush and the release of its Leases follow."""
from __future__ import annotations

import asyncio
import signal

from typing import Any

import aiohttp.web

from homing.operator import logs, metrics
from homing.operator.admission_server import AdmissionServer

log = logs.get("homing.drain")


class Drain:
    def __init__(self) -> None:
        self.active = False
        self.stop_flag = asyncio.Event()  # given to kopf.operator: set when the drain is over

    def on_sigterm(self, seconds: float) -> None:
        """Installed once kopf has installed its own handlers (they would replace ours)."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.begin, seconds)

    def begin(self, seconds: float) -> None:
        if self.active:
            return
        self.active = True
        metrics.READY.set(0)  # no new endpoints point here
        log.info("stopping: draining admissions before the operator stops", seconds=seconds)
        asyncio.get_running_loop().call_later(seconds, self.stop_flag.set)


current = Drain()


class DrainingServer(AdmissionServer):
    """The admission server; while draining, every answer closes its connection."""

    async def _serve(self, fn: Any, request: aiohttp.web.Request) -> aiohttp.web.Response:  # type: ignore[override]
        response = await super()._serve(fn, request)
        if current.active:
            response.force_close()
        return response
