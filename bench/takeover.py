"""`make bench-takeover`: how long the writer is missing when the leading replica dies, on a
real API server. Two operator processes behind the harness's TCP failover
proxy; the leader is SIGKILLed during a 300-pod burst of a remembered workload
(e2e/homing_e2e/failover.py), --repeats times, each in fresh namespaces; then one
rolling upgrade (graceful handover, the Lease released). Writes bench/results/takeover.json.

    .venv/bin/python bench/takeover.py [--repeats 3] [--pods 300] [--homes 200]

Takeover = SIGKILL of the leader -> another replica leads and has written what it saw
(homing_leader == 1 is set after the take-over flush). With client-go's timings the
floor is the lease duration (15 s) after the leader's last renewal.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from homing.kube.client import Kube  # noqa: E402
from homing_e2e import failover, objects  # noqa: E402
from homing_e2e.cluster import LocalControlPlane, build_binaries  # noqa: E402
from homing_e2e.fake_kubelet import FakeKubelet  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


async def one_failover(kube: Kube, kubeconfig: Path, run: int, pods: int, homes: int) -> dict:
    async with failover.remembered(kube, kubeconfig, f"take{run}-{objects.short_id()}", homes, 10) as (replicas, ns, w):
        result = await failover.burst_with_leader_killed(kube, replicas, ns, w.owner, w.homes, w.spare, pods=pods, result=w.result)
    return result.summary()


async def one_rolling(kube: Kube, kubeconfig: Path) -> dict:
    async with failover.remembered(kube, kubeconfig, f"roll-{objects.short_id()}", 60, 5) as (replicas, ns, w):
        result = await failover.rolling_upgrade(kube, replicas, ns, w.owner, w.homes, w.spare, result=w.result)
    return result.summary()


async def measure(kubeconfig: Path, repeats: int, pods: int, homes: int) -> dict:
    kube = await Kube.connect(str(kubeconfig))
    await objects.install_crd(kube)
    kubelet = FakeKubelet(kube)
    kubelet.start()
    try:
        runs = []
        for run in range(repeats):
            runs.append(await one_failover(kube, kubeconfig, run, pods, homes))
            print(f"failover {run + 1}/{repeats}: {runs[-1]}", flush=True)
        rolling = await one_rolling(kube, kubeconfig)
        print(f"rolling upgrade: {rolling}", flush=True)
    finally:
        await kubelet.stop()
        await kube.close()
    takeovers = [r["takeover_seconds"] for r in runs]
    return {
        "what": "leader SIGKILLed during a burst of a remembered rankless workload; two replicas behind a TCP failover proxy",
        "timings": {"lease_seconds": 15, "renew_seconds": 10, "retry_seconds": 2, "handover_grace_seconds": 10},
        "pods_per_burst": pods,
        "homes": homes,
        "takeover_seconds_median": statistics.median(takeovers),
        "takeover_seconds": takeovers,
        "decided_ratio_median": statistics.median(r["decided"] / r["pods"] for r in runs),
        "failed_creations": sum(r["failed_creations"] for r in runs),
        "duplicate_promises": sum(len(r["duplicate_promises"]) for r in runs),
        "missing_from_memory": sum(len(r["missing_from_memory"]) for r in runs),
        "runs": runs,
        "rolling_upgrade": rolling,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pods", type=int, default=300)
    ap.add_argument("--homes", type=int, default=200)
    ap.add_argument("--out", type=Path, default=RESULTS / "takeover.json")
    args = ap.parse_args()
    build_binaries()
    cp = LocalControlPlane().start()
    try:
        report = asyncio.run(measure(cp.kubeconfig, args.repeats, args.pods, args.homes))
    finally:
        cp.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"takeover median {report['takeover_seconds_median']} s over {args.repeats} runs; wrote {args.out}")


if __name__ == "__main__":
    main()
