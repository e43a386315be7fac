"""What a busy operator loop costs a webhook's answer: homing's admission server on a gated loop
(reviews read, decided and answered on a thread of their own, each decision holding the loop's
gate, loopgate.py) against the same server on an ordinary loop, answering on the operator's loop
itself (kopf's own server's way, and homing's before 2026-12-04). The loop is kept busy by tasks that each work a little and yield, as watch
events do in a burst; the client, in a process of its own, sends reviews in the Job controller's
growing batches (1, 2, 4, 8 at once) over kept-alive connections and times each answer.

    bench/admission_loop.py [--rounds 60] [--busy 0 10 40] [--out admission-loop.json]"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import aiohttp.web
import orjson

RESULTS = Path(__file__).resolve().parent / "results"
DECISION_SECONDS = 0.002  # kopf's function with homing's handler, at p50 on this machine (docs/benchmarks.md)
GATE = None  # the operator loop's gate, which the decision holds as homing's Admitter does
STEP_SECONDS = 0.0003  # one watch event's work between two yields of a busy task
BATCHES = (1, 2, 4, 8)  # the Job controller's slow start: each batch once the one before is answered


def work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def decision(review: dict, **_: object) -> dict:
    with GATE.held():
        work(DECISION_SECONDS)
    return {"response": {"uid": review["request"]["uid"], "allowed": True}}


async def busy() -> None:
    while True:
        work(STEP_SECONDS)
        await asyncio.sleep(0)


async def server(busy_tasks: int, port: int) -> None:
    from homing.kube import loopgate
    from homing.kube.admission_server import AdmissionServer

    global GATE
    GATE = loopgate.of(asyncio.get_running_loop())
    for _ in range(busy_tasks):
        asyncio.ensure_future(busy())
    async for _ in AdmissionServer("127.0.0.1", port, None, draining=lambda: False)(decision):
        pass


async def client(port: int, rounds: int) -> list[float]:
    seconds: list[float] = []
    async with aiohttp.ClientSession() as session:
        async def one(uid: str) -> None:
            started = time.perf_counter()
            body = orjson.dumps({"request": {"uid": uid, "object": {}}})
            async with session.post(f"http://127.0.0.1:{port}/homing-pods", data=body) as resp:
                assert resp.status == 200, resp.status
                await resp.read()
            seconds.append(time.perf_counter() - started)

        for r in range(rounds):
            for size in BATCHES:
                await asyncio.gather(*(one(f"{r}-{size}-{i}") for i in range(size)))
    return seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(kind: str, busy_tasks: int, rounds: int) -> dict:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, str(busy_tasks), str(port)])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        seconds = sorted(asyncio.run(client(port, rounds)))
    finally:
        proc.kill()
        proc.wait()
    pick = lambda q: round(seconds[min(len(seconds) - 1, int(q * len(seconds)))] * 1000, 1)  # noqa: E731
    return {"server": kind, "busy_tasks": busy_tasks, "loop_turn_ms": round(busy_tasks * STEP_SECONDS * 1000, 1),
            "reviews": len(seconds), "p50_ms": round(statistics.median(seconds) * 1000, 1), "p90_ms": pick(0.9),
            "p99_ms": pick(0.99)}


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        from homing.kube.loopgate import GatedLoop

        with asyncio.Runner(loop_factory=GatedLoop if sys.argv[2] == "homing" else None) as runner:
            runner.run(server(int(sys.argv[3]), int(sys.argv[4])))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--busy", type=int, nargs="+", default=[0, 10, 40])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="admission-loop.json")
    args = p.parse_args()
    runs = []
    for repeat in range(1, args.repeats + 1):
        for busy_tasks in args.busy:
            for kind in ("on-the-loop", "homing"):  # interleaved: the machine's noise falls on both
                row = {"repeat": repeat, **measure(kind, busy_tasks, args.rounds)}
                runs.append(row)
                print(json.dumps(row), flush=True)
    summary = []
    for busy_tasks in args.busy:
        med = {kind: round(statistics.median(r["p50_ms"] for r in runs if r["server"] == kind and r["busy_tasks"] == busy_tasks), 1)
               for kind in ("on-the-loop", "homing")}
        summary.append({"busy_tasks": busy_tasks, "p50_ms_on_the_loop": med["on-the-loop"], "p50_ms_homing": med["homing"],
                        "ratio": round(med["homing"] / med["on-the-loop"], 2)})
    for row in summary:
        print(f"busy tasks {row['busy_tasks']:>3}: p50 on the loop {row['p50_ms_on_the_loop']} ms, "
              f"homing's server {row['p50_ms_homing']} ms ({row['ratio']}x)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps({"decision_seconds": DECISION_SECONDS, "step_seconds": STEP_SECONDS,
                                                 "batches": BATCHES, "runs": runs, "summary": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
