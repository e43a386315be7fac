"""Admission on a loop of its own (turns.py): the webhook server's decisions and the
operator's loop never touch homing's state at once, a decision waits for the end of one
callback of the operator's loop and not for its turn, and the server's thread starts, serves
and stops with the protocol kopf runs it by."""
from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
import orjson

from homing.kube.admission.admission_server import WEBHOOK_ID, AdmissionServer
from homing.kube.admission.turns import Turns, TurnTakingLoop, takes_turns

from .test_admission_server import free_port
from .wire import POD_RESOURCE

STEP_SECONDS = 0.001  # one callback's work on the operator's loop: a watch event's


def work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Shared:
    """homing's state as both sides see it: who is inside, and how many callbacks of the
    operator's loop have ended."""

    def __init__(self) -> None:
        self.inside: str | None = None
        self.overlaps: list[tuple[str, str]] = []
        self.steps = 0

    def enter(self, who: str) -> None:
        if self.inside is not None:
            self.overlaps.append((self.inside, who))
        self.inside = who

    def leave(self) -> None:
        self.inside = None


async def busy(shared: Shared) -> None:
    """A task of the operator's loop: watch events, each a callback of work between awaits."""
    while True:
        shared.enter("loop")
        work(STEP_SECONDS)
        shared.leave()
        shared.steps += 1
        await asyncio.sleep(0)


def run_turn_taking(main, turns: Turns) -> object:
    with asyncio.Runner(loop_factory=lambda: TurnTakingLoop(turns)) as runner:
        return runner.run(main())


def test_a_decision_never_runs_beside_a_callback_and_waits_for_one_callback_at_most() -> None:
    turns = Turns(hand_over_seconds=30.0)  # a machine however slow: the hand-over is waited for, not timed
    shared = Shared()
    waited: list[int] = []

    def decisions(stop: threading.Event) -> None:
        while not stop.is_set():
            asked = shared.steps
            with turns.decision():
                waited.append(shared.steps - asked)
                shared.enter("decision")
                work(STEP_SECONDS)
                shared.leave()
            time.sleep(0.002)

    async def main() -> None:
        tasks = [asyncio.create_task(busy(shared)) for _ in range(8)]
        stop = threading.Event()
        thread = threading.Thread(target=decisions, args=(stop,))
        thread.start()
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.get_running_loop().run_in_executor(None, thread.join)
        for task in tasks:
            task.cancel()

    run_turn_taking(main, turns)
    assert len(waited) > 50 and shared.steps > 50, (len(waited), shared.steps)
    assert shared.overlaps == []
    # one turn of that loop is eight callbacks: the decision waits for the one in progress
    assert max(waited) <= 1, sorted(waited)[-10:]


def test_only_a_turn_taking_loop_has_turns() -> None:
    turns = Turns()
    assert run_turn_taking(lambda: _running_turns(), turns) is turns
    assert asyncio.run(_running_turns()) is None


async def _running_turns() -> Turns | None:
    return takes_turns(asyncio.get_running_loop())


def review(uid: str) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                     "resource": POD_RESOURCE, "operation": "CREATE", "userInfo": {"username": "u"},
                                     "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": uid}}}})


def test_beside_a_turn_taking_loop_the_server_decides_on_its_own_thread_in_its_turn_and_stops_with_kopf() -> None:
    turns = Turns()
    shared = Shared()
    port = free_port()
    seen: list[tuple[str, bool]] = []

    async def fn(data: dict, **_: object) -> dict:  # where kopf's function stands
        seen.append((threading.current_thread().name, turns._lock.locked()))
        shared.enter("decision")
        work(STEP_SECONDS)
        shared.leave()
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    server = AdmissionServer("127.0.0.1", port, None, draining=lambda: False)
    loaded: list[str] = []

    async def main() -> list[int]:
        tasks = [asyncio.create_task(busy(shared)) for _ in range(8)]
        configs = server(fn)
        await configs.__anext__()
        server.soon(lambda: loaded.append(threading.current_thread().name))  # as a renewed certificate is
        statuses = []
        async with aiohttp.ClientSession() as session:
            for i in range(20):
                async with session.post(f"http://127.0.0.1:{port}/{WEBHOOK_ID}", data=review(f"r{i}")) as resp:
                    statuses.append(resp.status)
                    assert (await resp.json())["response"] == {"uid": f"r{i}", "allowed": True}
        await configs.aclose()
        for task in tasks:
            task.cancel()
        return statuses

    assert run_turn_taking(main, turns) == [200] * 20
    assert seen == [("homing-admission", True)] * 20
    assert loaded == ["homing-admission"]
    assert shared.overlaps == []
    assert not any(t.name == "homing-admission" for t in threading.enumerate())  # stopped with kopf
