"""Self-health without a cluster (behaviour.md "Operation"): supervised loops survive exceptions, a dead
or failing loop and a silent watch fail liveness, the loop-lag monitor sees a blocked
event loop, the liveness probe kopf serves names the reasons, and /readyz says so over
real HTTP."""
from __future__ import annotations

import asyncio
import socket
import time

import aiohttp
import kopf
import pytest
from prometheus_client import REGISTRY

from homing.kube import handlers
from homing.kube.health import selfhealth
from homing.kube.health.selfhealth import LoopLagMonitor, Supervisor, serve_ready
from homing.kube.watch.reflector import Reflector


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


async def until(check, timeout: float = 3.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout}s")
        await asyncio.sleep(0.01)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_loop_survives_a_timeout_error_and_keeps_working() -> None:
    sup = Supervisor(backoff_start=0.01)
    ticks: list[float] = []

    async def flush_forever() -> None:
        if not ticks:
            ticks.append(time.monotonic())
            raise TimeoutError()  # what once killed the flush loop for good
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    counted = sample("homing_loop_failures_total", {"loop": "flush-once"})
    sup.spawn("flush-once", flush_forever)
    try:
        await until(lambda: len(ticks) >= 10, what="the loop working again")
        assert sample("homing_loop_failures_total", {"loop": "flush-once"}) == counted + 1
        assert sup.loops["flush-once"].failures == 1
        assert sup.problems() == []
    finally:
        await sup.close()


async def test_loop_without_restart_that_raises_fails_liveness() -> None:
    sup = Supervisor()

    async def sweep() -> None:
        raise RuntimeError("API said no")

    task = sup.spawn("sweep-once", sweep, restart=False)
    await asyncio.wait_for(task, 2)
    problems = sup.problems()
    assert len(problems) == 1 and "sweep-once" in problems[0] and "API said no" in problems[0]


async def test_loop_that_ends_fails_liveness() -> None:
    sup = Supervisor()

    async def quits() -> None:
        return None

    await asyncio.wait_for(sup.spawn("quits", quits), 2)
    assert any("quits" in p for p in sup.problems())


async def test_loop_failing_again_and_again_fails_liveness_but_keeps_trying() -> None:
    sup = Supervisor(backoff_start=0.001, backoff_cap=0.005, max_failures_in_row=5)
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise ConnectionError("refused")

    sup.spawn("broken", broken)
    try:
        await until(lambda: calls >= 6, what="six attempts")
        assert any("broken" in p and "failures in a row" in p for p in sup.problems())
        assert not sup.loops["broken"].task.done()
    finally:
        await sup.close()


async def test_silent_watch_fails_liveness_and_exports_its_age() -> None:
    sup = Supervisor(watch_stale_seconds=300)
    # Never listed (no API server): it keeps retrying, its age only grows.
    silent = Reflector(None, "silentthings", "/api/v1/silentthings", lambda *_: None, retry=60)  # type: ignore[arg-type]
    sup.watch(silent)
    try:
        now = time.monotonic()
        assert sup.problems(now) == []
        problems = sup.problems(now + 301)
        assert len(problems) == 1 and "silentthings" in problems[0]
        assert sample("homing_watch_age_seconds", {"resource": "silentthings"}) >= 301
        assert not sup.loops["watch:silentthings"].task.done()
    finally:
        await sup.close()


async def test_loop_lag_monitor_sees_a_blocked_loop() -> None:
    monitor = LoopLagMonitor(interval=0.01)
    count = sample("homing_event_loop_lag_seconds_count")
    small = sample("homing_event_loop_lag_seconds_bucket", {"le": "0.1"})
    task = asyncio.create_task(monitor.run())
    try:
        await asyncio.sleep(0.05)
        started = time.monotonic()
        time.sleep(0.2)  # a deliberate block of the event loop
        blocked = time.monotonic() - started
        await asyncio.sleep(0.05)
    finally:
        task.cancel()
    # The monitor's sleep began at most one interval before the block.
    assert monitor.worst >= blocked - monitor.interval
    observed = sample("homing_event_loop_lag_seconds_count") - count
    over_100ms = observed - (sample("homing_event_loop_lag_seconds_bucket", {"le": "0.1"}) - small)
    assert observed >= 3 and over_100ms >= 1


@pytest.fixture
async def ready_server():
    """A real readiness server on a free port; yields a GET helper and its knob."""
    state = {"ready": False}
    port = free_port()
    runner = await serve_ready("127.0.0.1", port, ready=lambda: state["ready"])

    async def get(path: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}{path}") as resp:
                return resp.status, await resp.text()

    yield get, state
    await runner.cleanup()


async def test_readyz_follows_ready(ready_server) -> None:
    get, state = ready_server
    assert (await get("/readyz"))[0] == 503
    state["ready"] = True
    assert await get("/readyz") == (200, "ready")


async def test_the_liveness_probe_is_ok_while_there_are_no_problems(monkeypatch) -> None:
    sup = Supervisor()
    monkeypatch.setattr(selfhealth, "current", sup)
    assert await handlers.liveness() == "ok"


async def test_the_liveness_probe_fails_with_the_reason_and_kopf_answers_500(monkeypatch) -> None:
    """kopf's liveness endpoint answers 500 when a probe raises; a permanent error is not retried."""
    sup = Supervisor()
    monkeypatch.setattr(selfhealth, "current", sup)

    async def sweep() -> None:
        raise TimeoutError()

    await asyncio.wait_for(sup.spawn("sweep", sweep, restart=False), 2)
    with pytest.raises(kopf.PermanentError) as failed:
        await handlers.liveness()
    assert "sweep" in str(failed.value) and "TimeoutError" in str(failed.value)
    await sup.close()


async def test_the_liveness_probe_is_ok_before_there_is_a_supervisor(monkeypatch) -> None:
    monkeypatch.setattr(selfhealth, "current", None)
    assert await handlers.liveness() == "ok"
    broken = Supervisor()
    monkeypatch.setattr(selfhealth, "current", broken)
    await asyncio.wait_for(broken.spawn("dies", _raise, restart=False), 2)
    with pytest.raises(kopf.PermanentError, match="dies"):
        await handlers.liveness()


async def test_a_problem_source_adds_its_reasons() -> None:
    sup = Supervisor()
    sup.sources.append(lambda: ["watch pods behind for 301s"])
    assert sup.problems() == ["watch pods behind for 301s"]


async def _raise() -> None:
    raise ValueError("boom")
