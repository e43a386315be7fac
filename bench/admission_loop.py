"""What a busy operator loop costs a webhook's answer: homing's server (a review read and
answered in the loop callback its bytes arrive in) against kopf's own webhook server (aiohttp:
each review passes from the connection's callback to a task, a hop of a loop turn each),
both on a loop kept busy by tasks that work a little and yield, as watch events do in a
burst. The client, in a process of its own, sends reviews in the Job controller's growing
batches (1, 2, 4, 8 at once) over kept-alive connections and times each answer. The function
both servers call decides in DECISION_SECONDS of CPU, as kopf's function with homing's handler
does, without waiting, as on the real operator (`homing_admission_answers_total`).

    .venv/bin/python bench/admission_loop.py [--rounds 60] [--busy 0 10 40] [--repeats 3]

Prints the medians and writes bench/results/admission-loop.json, every run kept."""
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
import orjson

RESULTS = Path(__file__).resolve().parent / "results"
DECISION_SECONDS = 0.001  # kopf's function with homing's handler, about a millisecond a review (docs/benchmarks.md)
STEP_SECONDS = 0.0003  # one watch event's work between two yields of a busy task
BATCHES = (1, 2, 4, 8)  # the Job controller's slow start: each batch once the one before is answered
SERVERS = ("kopf", "homing")


def work(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def decision(review: dict, **_: object) -> dict:
    work(DECISION_SECONDS)
    return {"response": {"uid": review["request"]["uid"], "allowed": True}}


async def busy() -> None:
    while True:
        work(STEP_SECONDS)
        await asyncio.sleep(0)


async def server(kind: str, busy_tasks: int, port: int) -> None:
    import kopf

    from homing.kube.admission.admission_server import AdmissionServer

    for _ in range(busy_tasks):
        asyncio.ensure_future(busy())
    serving = kopf.WebhookServer(addr="127.0.0.1", port=port, insecure=True) if kind == "kopf" else \
        AdmissionServer("127.0.0.1", port, None, draining=lambda: False)
    async for _ in serving(decision):
        pass


async def client(port: int, rounds: int) -> list[float]:
    seconds: list[float] = []
    async with aiohttp.ClientSession() as session:
        async def one(uid: str) -> None:
            started = time.perf_counter()
            body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                 # a pod CREATE as the API server sends it: homing's server answers
                                 # anything else itself, without calling the function measured
                                 "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                             "resource": {"group": "", "version": "v1", "resource": "pods"},
                                             "operation": "CREATE", "userInfo": {"username": "bench"},
                                             "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": uid}}}})
            async with session.post(f"http://127.0.0.1:{port}/homing-pods?timeout=2s", data=body,
                                    headers={"Content-Type": "application/json"}) as resp:
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


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[round(p * (len(ordered) - 1))]


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
        seconds = asyncio.run(client(port, rounds))
    finally:
        proc.kill()
        proc.wait()
    ms = lambda p: round(percentile(seconds, p) * 1000, 2)  # noqa: E731
    return {"server": kind, "busy_tasks": busy_tasks, "loop_turn_ms": round(busy_tasks * STEP_SECONDS * 1000, 1),
            "reviews": len(seconds), "p50_ms": ms(0.5), "p90_ms": ms(0.9), "p99_ms": ms(0.99)}


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
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
            for kind in SERVERS:  # alternated: the machine's noise falls on both
                row = {"repeat": repeat, **measure(kind, busy_tasks, args.rounds)}
                runs.append(row)
                print(json.dumps(row), flush=True)
    summary = []
    for busy_tasks in args.busy:
        med = {kind: round(statistics.median(r["p50_ms"] for r in runs if r["server"] == kind and r["busy_tasks"] == busy_tasks), 2)
               for kind in SERVERS}
        summary.append({"busy_tasks": busy_tasks, "loop_turn_ms": round(busy_tasks * STEP_SECONDS * 1000, 1),
                        "p50_ms_kopf": med["kopf"], "p50_ms_homing": med["homing"],
                        "ratio": round(med["homing"] / med["kopf"], 2)})
    for row in summary:
        print(f"loop turn {row['loop_turn_ms']:>4} ms: p50 kopf's server {row['p50_ms_kopf']} ms, "
              f"homing's {row['p50_ms_homing']} ms ({row['ratio']}x)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps({"decision_seconds": DECISION_SECONDS, "step_seconds": STEP_SECONDS,
                                                 "batches": BATCHES, "runs": runs, "summary": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
