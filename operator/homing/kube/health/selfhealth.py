"""Self-health (behaviour.md "Operation"): background loops that survive any exception, watches that
must keep delivering, an event loop that must stay responsive. Liveness is kopf's
endpoint, answering from homing's probe (handlers.py), which asks `current.problems()`;
readiness is homing's own /readyz, the `homing_ready` gauge, which the start-up path sets
once the index is loaded and the webhook serves (kopf has no readiness of its own)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import REGISTRY

from homing.kube.admission import drain
from homing.kube.signals import logs, metrics
from homing.kube.watch.reflector import Reflector

log = logs.get("homing.selfhealth")

Factory = Callable[[], Awaitable[None]]

current: Supervisor | None = None


def is_ready() -> bool:
    """Readiness (behaviour.md "Operation"): memory loaded and the webhook serving, as `homing_ready` says."""
    return REGISTRY.get_sample_value("homing_ready") == 1.0


class LoopLagMonitor:
    """Sleeps `interval` again and again; how late each wake-up comes is time the loop
    spent on someone else's work, time an admission would have waited too."""

    warn_after = 0.5  # seconds of lag worth a log line

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.worst = 0.0

    async def run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            self.observe(time.monotonic() - before - self.interval)

    def observe(self, lag: float) -> None:
        lag = max(0.0, lag)
        metrics.EVENT_LOOP_LAG.observe(lag)
        self.worst = max(self.worst, lag)
        if lag >= self.warn_after:
            log.warning("event loop blocked", lag_seconds=round(lag, 3))


@dataclass
class LoopState:
    name: str
    restart: bool
    failures_in_row: int = 0
    failures: int = 0
    last_error: str = ""
    started_at: float = 0.0
    running: bool = False  # inside the coroutine, not waiting out a backoff
    dead: str = ""  # why it stopped for good; empty while it lives
    task: asyncio.Task[None] | None = None


class Supervisor:
    def __init__(
        self,
        watch_stale_seconds: float = 300.0,
        max_failures_in_row: int = 5,
        healthy_after: float = 60.0,
        backoff_start: float = 0.5,
        backoff_cap: float = 30.0,
        refresh_interval: float = 5.0,
    ) -> None:
        self.watch_stale_seconds = watch_stale_seconds
        self.max_failures_in_row = max_failures_in_row
        self.healthy_after = healthy_after  # a run this long ends a streak of failures
        self.backoff_start, self.backoff_cap = backoff_start, backoff_cap
        self.refresh_interval = refresh_interval
        self.loops: dict[str, LoopState] = {}
        self.reflectors: dict[str, Reflector] = {}
        self.sources: list[Callable[[], list[str]]] = []  # more reasons: the kopf watches that fell behind
        self._reported: set[str] = set()

    def spawn(self, name: str, factory: Factory, *, restart: bool = True) -> asyncio.Task[None]:
        """Runs `factory()` as a named background loop that is meant to run forever."""
        old = self.loops.get(name)
        if old is not None and old.task is not None and not old.task.done():
            raise ValueError(f"a loop named {name!r} is already running")
        state = LoopState(name, restart)
        state.task = asyncio.get_running_loop().create_task(self._keep_running(state, factory), name=f"homing:{name}")
        self.loops[name] = state
        return state.task

    def watch(self, reflector: Reflector) -> asyncio.Task[None]:
        """Runs a reflector under supervision; liveness fails when it goes silent."""
        if reflector.resource in self.reflectors:
            raise ValueError(f"a reflector for {reflector.resource!r} is already watched")
        self.reflectors[reflector.resource] = reflector
        if "watch-age" not in self.loops:
            self.spawn("watch-age", self._refresh_forever)
        return self.spawn(f"watch:{reflector.resource}", reflector.run)

    def problems(self, now_monotonic: float | None = None) -> list[str]:
        """Reasons liveness must fail; empty when healthy. Refreshes the watch-age gauge."""
        now = time.monotonic() if now_monotonic is None else now_monotonic
        found = [p for state in self.loops.values() if (p := self._loop_problem(state, now))]
        for resource, reflector in self.reflectors.items():
            age = reflector.age(now)
            metrics.WATCH_AGE.labels(resource).set(age)
            if age > self.watch_stale_seconds:
                found.append(f"watch {resource} silent for {age:.0f}s (bound {self.watch_stale_seconds:.0f}s)")
        for source in self.sources:
            found.extend(source())
        return found

    async def close(self) -> None:
        """Cancels every loop (shutdown) and waits for them."""
        tasks = [s.task for s in self.loops.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _loop_problem(self, state: LoopState, now: float) -> str:
        if state.dead:
            return f"loop {state.name} stopped: {state.dead}"
        recovered = state.running and now - state.started_at >= self.healthy_after
        if state.failures_in_row >= self.max_failures_in_row and not recovered:
            return f"loop {state.name} failing: {state.failures_in_row} failures in a row, last {state.last_error}"
        return ""

    async def _keep_running(self, state: LoopState, factory: Factory) -> None:
        backoff = self.backoff_start
        while True:
            err = await self._run_once(state, factory)
            if err is None:
                state.dead = "returned, but it should run forever"
                log.error("background loop ended", loop=state.name)
                return
            if self._failed(state, err):
                backoff = self.backoff_start
            if not state.restart:
                state.dead = f"failed: {state.last_error}"
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.backoff_cap)

    @staticmethod
    async def _run_once(state: LoopState, factory: Factory) -> Exception | None:
        """One run of the loop: None when it returned, the exception when it raised."""
        state.started_at, state.running = time.monotonic(), True
        try:
            await factory()
            return None
        except asyncio.CancelledError:
            state.dead = "cancelled"
            raise
        except Exception as err:  # anything at all: the supervisor counts it and restarts
            return err
        finally:
            state.running = False

    def _failed(self, state: LoopState, err: Exception) -> bool:
        """Records one failure; True when the run before it was long enough to count as
        healthy, which ends the streak."""
        healthy_run = time.monotonic() - state.started_at >= self.healthy_after
        state.failures_in_row = 1 if healthy_run else state.failures_in_row + 1
        state.failures += 1
        state.last_error = repr(err)[:300]
        metrics.LOOP_FAILURES.labels(state.name).inc()
        log.error(
            "background loop failed", loop=state.name, error=state.last_error,
            failures_in_row=state.failures_in_row, restart=state.restart, exc_info=err,
        )
        return healthy_run

    async def _refresh_forever(self) -> None:
        """Keeps the watch-age gauge fresh and logs each problem once when it appears."""
        while True:
            found = set(self.problems())
            for problem in sorted(found - self._reported):
                log.warning("liveness problem", problem=problem)
            self._reported = found
            await asyncio.sleep(self.refresh_interval)


async def serve_ready(
    host: str, port: int, ready: Callable[[], bool] = is_ready, drain_seconds: float = 0.0
) -> web.AppRunner:
    """GET /readyz: 200 when `ready()`, else 503. GET /drain (the preStop hook): drains
    admissions for `drain_seconds` (drain.py), then answers. Call `cleanup()` on the result to stop."""

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ready") if ready() else web.Response(text="not ready", status=503)

    async def drain_then_answer(_: web.Request) -> web.Response:
        await drain.current.run(drain_seconds)
        return web.Response(text="drained")

    app = web.Application()
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/drain", drain_then_answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    log.info("readiness endpoint serving", host=host, port=port)
    return runner


def liveness_problems() -> list[str]:
    """What kopf's liveness endpoint reports through homing's probe: nothing while starting."""
    return current.problems() if current is not None else []
