"""The operator loop's gate (design.md "Admission"): every callback of the loop runs holding it, so
a thread that holds it sees the memory as a callback would, between two steps of any handler;
and a thread waiting for it goes before the loop's next callback, not after the loop's turn."""
from __future__ import annotations

import asyncio
import threading
import time

from homing.kube import loopgate
from homing.kube.loopgate import GatedLoop


def work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Steps:
    """A burst of watch events, as the loop sees one: many tasks, each a little work then a yield.
    Each step writes a pair in two halves, letting other threads run between them (as a step
    that reads a socket or parses in C does)."""

    def __init__(self, tasks: int, step_seconds: float) -> None:
        self.tasks, self.step_seconds = tasks, step_seconds
        self.count, self.first, self.second = 0, 0, 0
        self.running = True

    async def one(self) -> None:
        while self.running:
            self.first += 1
            work(self.step_seconds / 2)
            time.sleep(0)  # the interpreter lock let go: any thread may run here
            work(self.step_seconds / 2)
            self.second += 1
            self.count += 1
            await asyncio.sleep(0)

    def start(self) -> list[asyncio.Task]:
        return [asyncio.ensure_future(self.one()) for _ in range(self.tasks)]


def run_gated(main) -> object:
    with asyncio.Runner(loop_factory=GatedLoop) as runner:
        return runner.run(main())


def test_holding_the_gate_a_thread_never_sees_a_callback_half_done():
    steps = Steps(tasks=20, step_seconds=0.0002)
    torn: list[tuple[int, int]] = []

    def reader(gate: loopgate.Gate) -> int:
        deadline = time.monotonic() + 10
        while steps.count < 2000 and time.monotonic() < deadline:
            with gate.held():
                first, second = steps.first, steps.second
            if first != second:
                torn.append((first, second))
        return steps.count

    async def main() -> int:
        tasks = steps.start()
        counted = await asyncio.to_thread(reader, loopgate.of(asyncio.get_running_loop()))
        steps.running = False
        await asyncio.gather(*tasks)
        return counted

    assert run_gated(main) > 0  # the loop ran its steps meanwhile
    assert torn == []


def test_a_thread_waiting_for_the_gate_goes_before_the_loops_next_callback():
    """200 steps of 0.5 ms make a 100 ms turn; a waiting thread gets in after at most the step
    under way (a plain lock would let the loop take it back at every step until the turn ends)."""
    steps = Steps(tasks=200, step_seconds=0.0005)
    waited: list[int] = []

    def waiter(gate: loopgate.Gate) -> None:
        for _ in range(20):
            time.sleep(0.003)
            asked = steps.count
            with gate.held():
                waited.append(steps.count - asked)

    async def main() -> None:
        tasks = steps.start()
        await asyncio.sleep(0.05)  # the burst under way
        await asyncio.to_thread(waiter, loopgate.of(asyncio.get_running_loop()))
        steps.running = False
        await asyncio.gather(*tasks)

    run_gated(main)
    assert len(waited) == 20
    assert max(waited) <= 1, waited


def test_on_the_loops_own_thread_the_gate_is_already_held():
    async def main() -> bool:
        with loopgate.of(asyncio.get_running_loop()).held():  # would deadlock were it taken again
            return True

    assert run_gated(main) is True


def test_every_kind_of_scheduled_callback_runs_gated():
    ran: dict[str, bool] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()
        gate = loop.gate
        done = asyncio.Event()

        def probe(name: str) -> None:
            ran[name] = gate._gate.locked()
            if len(ran) == 4:
                done.set()

        loop.call_soon(probe, "call_soon")
        loop.call_later(0.01, probe, "call_later")
        loop.call_at(loop.time() + 0.02, probe, "call_at")
        threading.Thread(target=lambda: loop.call_soon_threadsafe(probe, "call_soon_threadsafe")).start()
        await asyncio.wait_for(done.wait(), 5)

    run_gated(main)
    assert ran == {"call_soon": True, "call_later": True, "call_at": True, "call_soon_threadsafe": True}


def test_an_ordinary_loop_has_no_gate_to_take():
    async def main() -> bool:
        with loopgate.of(asyncio.get_running_loop()).held():
            return True

    assert isinstance(asyncio.run(_gate_kind()), loopgate.NoGate)
    assert asyncio.run(main()) is True


async def _gate_kind() -> object:
    return loopgate.of(asyncio.get_running_loop())
