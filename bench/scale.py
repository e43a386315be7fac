"""`make bench-scale`: one operator on a real etcd + kube-apiserver, in steps
of nodes, remembered ranks, live pods and HyperNodes, each step on a fresh control plane.

    .venv/bin/python bench/scale.py [--steps 500,2000,5000] [--out scale.json]
    .venv/bin/python bench/scale.py --custom nodes=60,ranks=3000,live=200,hypernodes=6,burst=100,gang=256

A step fills the API server first (nodes with status, HyperNodes in three tiers, owner
stand-ins, PlacementMemory objects written directly in the operator's own encoding,
live pods bound through `pods/binding`), then starts `python -m homing` and measures:

- cold start to ready (list + load + serving: the operator's /readyz);
- then, all at once: a gang of `gang` remembered ranks restarts (created, admitted,
  bound elsewhere), a remembered workload bursts `burst` pods through the webhook, and
  `burst` plain pods go to a namespace homing does not serve — pods created per second
  with homing over without, in the same run; webhook p99 as the API server measures it
  (apiserver_admission_webhook_admission_duration_seconds) and as homing does; event-loop
  lag p99 over the burst;
- the time from the gang's last bind until its PlacementMemory holds every new node;
  writes per owner per second (PlacementMemory primaries written, per owner, over the
  phase); bytes per rank and the largest object, as etcd stores them; peak RSS.

Writes bench/results/scale.json (the issue's format, steps merged by size) and
scale-details.json (how each figure was taken), and the chart scale.svg.

    .venv/bin/python bench/scale.py --steps 500 --webhook noop      # or noop-go

The machine's floor: the same fill and burst through a webhook that does nothing
(bench/noop_webhook.py on aiohttp, as homing served until 2026-12-04, or bench/noopwebhook/main.go),
registered as homing registers itself; the API server's webhook p99, the creation ratio
and (Python) the loop lag, in bench/results/scale-floor.json."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import noop_floor  # noqa: E402
import scale_chart  # noqa: E402
import scale_cluster as fill  # noqa: E402
import scale_measure as m  # noqa: E402
from homing.kube.client import Kube  # noqa: E402
from homing.kube.watch.reflector import Reflector  # noqa: E402
from homing.placementmemory import GROUP, PLURAL, VERSION, belonging, merge, read_object, shard_name  # noqa: E402
from homing_e2e import objects, volcano  # noqa: E402
from homing_e2e.cluster import LocalControlPlane, build_binaries  # noqa: E402
from homing_e2e.operator_process import OperatorProcess, scrape  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
KEYS = ("nodes", "ranks", "live_pods", "hypernodes", "cold_start_s", "rss_mb", "loop_lag_p99_ms",
        "apiserver_webhook_p99_ms", "homing_webhook_p99_ms", "create_throughput_ratio", "gang_recorded_s",
        "writes_per_owner_per_s", "bytes_per_rank", "max_object_bytes")
PM_PREFIX = f"/registry/{GROUP}/{PLURAL}/"


@dataclass(frozen=True)
class Step:
    nodes: int
    ranks: int
    live: int
    hypernodes: int
    burst: int = 2000
    gang: int = 4096
    per_owner: int = 4096  # ranks of each bulk owner
    width: int = 16  # requests in flight while filling


STEPS = {
    "smoke": Step(nodes=60, ranks=3000, live=200, hypernodes=6, burst=100, gang=256, per_owner=256),
    "500": Step(nodes=500, ranks=10_000, live=2_000, hypernodes=50),
    "2000": Step(nodes=2_000, ranks=100_000, live=8_000, hypernodes=200),
    "5000": Step(nodes=5_000, ranks=1_000_000, live=20_000, hypernodes=500),
}


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def parse_custom(text: str) -> Step:
    fields = dict(part.split("=", 1) for part in text.split(","))
    return Step(**{k: int(v) for k, v in fields.items()})


async def fill_cluster(kube: Kube, step: Step) -> tuple[fill.Layout, dict]:
    took: dict[str, float] = {}
    started = time.monotonic()
    await objects.install_crd(kube)
    for name in volcano.TOPOLOGY_CRDS:
        await objects.install_crd(kube, volcano.crd(name))
    await fill.namespaces(kube)
    await fill.nodes(kube, step.nodes, step.width)
    took["nodes_s"] = time.monotonic() - started
    hypernodes = await fill.hypernodes(kube, step.hypernodes, step.nodes, step.width)
    paths = fill.topologies(step.nodes, hypernodes)
    lay = await fill.layout(kube, step.nodes, step.ranks, step.gang, step.burst, step.per_owner, paths)
    mark = time.monotonic()
    took["objects"] = await fill.memories(kube, lay, step.width)
    took["memories_s"] = time.monotonic() - mark
    mark = time.monotonic()
    took["live_pods"] = await fill.live_pods(kube, lay, step.live, step.width)
    took["live_pods_s"] = time.monotonic() - mark
    took["hypernodes"] = len(hypernodes)
    return lay, {k: round(v, 2) for k, v in took.items()}


class WriteCounter:
    """Counts, per owner, the writes of its primary object (written last in every write)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.writes: dict[str, list[float]] = {}
        self.task: asyncio.Task | None = None

    def handle(self, kind: str | None, obj: dict) -> None:
        status = obj.get("status") or {}
        if kind in ("ADDED", "MODIFIED") and (status.get("shard") or {}).get("index", 1) == 1:
            uid = (status.get("owner") or {}).get("uid") or "?"
            self.writes.setdefault(uid, []).append(time.monotonic())

    async def start(self) -> None:
        path = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
        listing = await self.kube.request("GET", path, query=[("limit", "1")])
        watch = Reflector(self.kube, "bench-placementmemories", path, self.handle)
        watch.resource_version = listing["metadata"]["resourceVersion"]  # from now on, no listing
        self.task = asyncio.create_task(watch.run())

    def stop(self) -> None:
        if self.task:
            self.task.cancel()

    def per_second(self, window: float) -> tuple[float, float | None]:
        """(most writes of one owner / window, shortest gap between two writes of one owner)."""
        most = max((len(t) for t in self.writes.values()), default=0)
        gaps = [b - a for t in self.writes.values() for a, b in zip(t, t[1:])]
        return most / window, (min(gaps) if gaps else None)


async def owner_memory(kube: Kube, owner) -> dict[str, str]:
    """The owner's ranks -> node, as its PlacementMemory objects hold them now."""
    ns = owner.namespace
    base = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}"
    primary = await kube.request("GET", f"{base}/{shard_name(owner, 1)}")
    count = ((primary.get("status") or {}).get("shard") or {}).get("count") or 1
    items = [primary] + [await kube.request("GET", f"{base}/{shard_name(owner, n)}") for n in range(2, count + 1)]
    mem = merge(belonging([read_object(i) for i in items]))
    return {k: e.node for k, e in mem.ranks.items()}


async def wait_recorded(kube: Kube, owner, want: dict[str, str], timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            have = await owner_memory(kube, owner)
            if all(have.get(k) == v for k, v in want.items()):
                return time.monotonic()
        except Exception:
            pass  # a shard being rewritten: the next look
        await asyncio.sleep(0.2)
    raise TimeoutError("the gang's PlacementMemory never held every rank")


async def timed_creates(jobs: list, width: int) -> tuple[float, list[float]]:
    """(pods per second, per-request seconds) of creating through `jobs`."""
    latencies: list[float] = []

    async def timed(job) -> None:
        t = time.monotonic()
        await job()
        latencies.append(time.monotonic() - t)

    started = time.monotonic()
    await fill.pooled((lambda j=j: timed(j) for j in jobs), width)
    return len(jobs) / (time.monotonic() - started), latencies


@dataclass
class Creations:
    """What the creating side saw of one burst: the gang's binds and both creation rates."""
    moved: dict[str, str]  # the gang's rank -> its new node
    last_bind: float
    with_rate: float
    with_lat: list[float]
    without_rate: float
    without_lat: list[float]


async def creation_burst(kube: Kube, lay: fill.Layout) -> Creations:
    """The gang restart and both bursts at once: pods through the webhook and pods in a
    namespace it does not serve, in the same seconds."""
    gang, burst, plain = lay.gang, lay.burst, lay.plain
    shift = max(1, lay.nodes // 2)  # the gang comes back elsewhere: every rank's memory changes
    moved = {fill.rank_key(r): fill.node_name((gang.first_node + r + shift) % lay.nodes) for r in range(gang.ranks)}
    gang_jobs = [lambda r=r: fill.pod_on(kube, gang.ref, r, f"gang-{r}", moved[fill.rank_key(r)]) for r in range(gang.ranks)]
    with_jobs = [lambda r=r: fill.pod_on(kube, burst.ref, r, f"burst-{r}", None) for r in range(burst.ranks)]
    without_jobs = [lambda r=r: fill.pod_on(kube, plain, r, f"plain-{r}", None) for r in range(burst.ranks)]
    binds: list[float] = []

    async def gang_restart() -> None:
        async def one(job) -> None:
            binds.append(await job())
        await fill.pooled((lambda j=j: one(j) for j in gang_jobs), 8)

    (_, (with_rate, with_lat), (without_rate, without_lat)) = await asyncio.gather(
        gang_restart(), timed_creates(with_jobs, 8), timed_creates(without_jobs, 8))
    return Creations(moved, max(binds), with_rate, with_lat, without_rate, without_lat)


def webhook_figures(api_before: str, api_after: str) -> dict:
    """The webhook's latency as the API server measured it over the burst."""
    name = m.APISERVER_WEBHOOK_SECONDS
    api_hist = m.delta(m.buckets(api_after, name, m.homing_webhook), m.buckets(api_before, name, m.homing_webhook))
    return {
        "apiserver_webhook_calls": m.count(api_hist),
        "apiserver_webhook_p99_ms": _ms(m.quantile(api_hist, 0.99)),
        "apiserver_webhook_within_5ms": m.share_within(api_hist, 0.005),
        "apiserver_webhook_within_25ms": m.share_within(api_hist, 0.025),
        "apiserver_webhook_buckets_ms": sorted(1000 * le for le in api_hist if le != float("inf")),
    }


def creation_figures(made: Creations) -> dict:
    return {
        "create_with_per_s": made.with_rate,
        "create_without_per_s": made.without_rate,
        "create_with_p99_ms": 1000 * _p99(made.with_lat),
        "create_without_p99_ms": 1000 * _p99(made.without_lat),
    }


async def burst_phase(kube: Kube, op: OperatorProcess, lay: fill.Layout, step: Step) -> dict:
    """The gang restart and both bursts at once; what each side measured."""
    gang, burst = lay.gang, lay.burst
    api_before, op_before = await m.apiserver_metrics(kube), op.metrics()
    load_before = os.getloadavg()[0]  # the machine is shared: how busy it was says how to read the rest
    cpu_before = m.cpu_seconds(op.proc.pid)
    counter = WriteCounter(kube)
    await counter.start()
    started = time.monotonic()
    made = await creation_burst(kube, lay)
    phase_end, load_after, cpu_after = time.monotonic(), os.getloadavg()[0], m.cpu_seconds(op.proc.pid)
    api_after, op_after = await m.apiserver_metrics(kube), op.metrics()
    recorded = await wait_recorded(kube, gang.ref, made.moved, timeout=300)
    await asyncio.sleep(2)  # writes still due after the last change
    counter.stop()
    writes_per_s, min_gap = counter.per_second(time.monotonic() - started)
    homing_hist = m.delta(m.buckets(op_after, "homing_webhook_duration_seconds"), m.buckets(op_before, "homing_webhook_duration_seconds"))
    lag_hist = m.delta(m.buckets(op_after, "homing_event_loop_lag_seconds"), m.buckets(op_before, "homing_event_loop_lag_seconds"))
    gc_hist = {g: m.delta(m.buckets(op_after, "homing_gc_pause_seconds", lambda lb, g=g: lb.get("generation") == g),
                          m.buckets(op_before, "homing_gc_pause_seconds", lambda lb, g=g: lb.get("generation") == g))
               for g in ("0", "1", "2")}
    decided_before = m.counters(op_before, "homing_admissions", "decision")
    decisions = {d: n - decided_before.get(d, 0.0) for d, n in m.counters(op_after, "homing_admissions", "decision").items()}
    return {
        "phase_s": phase_end - started,
        "load_avg_1m": [load_before, load_after],
        "operator_cpu_s": cpu_after - cpu_before,  # for every admission and watch event of the phase
        "operator_cpu_ms_per_pod": 1000 * (cpu_after - cpu_before) / (gang.ranks + burst.ranks),
        "gang_recorded_s": recorded - made.last_bind,
        **creation_figures(made),
        **webhook_figures(api_before, api_after),
        "homing_webhook_calls": m.count(homing_hist),
        "homing_webhook_p99_ms": _ms(m.quantile(homing_hist, 0.99)),
        "loop_lag_p99_ms": _ms(m.quantile(lag_hist, 0.99)),
        "loop_lag_samples": m.count(lag_hist),
        "gc_pauses": {g: {"count": m.count(h), "p99_ms": _ms(m.quantile(h, 0.99)), "worst_bucket_ms": _ms(m.highest(h))}
                      for g, h in gc_hist.items()},
        "decisions": {d: n for d, n in sorted(decisions.items()) if n},  # the real decision path ran: mostly "home"
        "writes_per_owner_per_s": writes_per_s,
        "writes_min_gap_s": min_gap,
        "owners_written": len(counter.writes),
    }


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * (len(ordered) - 1) + 0.5))] if ordered else 0.0


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else 1000 * seconds


def start_log_breakdown(log_path: Path, started_wall: float) -> dict:
    """Seconds from the process start to the operator's own milestones, from its log."""
    marks: dict[str, float] = {}
    from datetime import datetime
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        at = rec.get("timestamp")
        if not at:
            continue
        t = datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() - started_wall
        event = rec.get("event")
        if event == "listed":
            marks.setdefault(f"listed_{rec.get('resource')}_s", t)
        elif event in ("memory loaded", "homing ready"):
            marks.setdefault(event.replace(" ", "_") + "_s", t)
    return {k: round(v, 2) for k, v in marks.items()}


async def run_step(step: Step) -> tuple[dict, dict]:
    cp = LocalControlPlane().start()
    cp_workdir = cp.workdir
    kube = await Kube.connect(str(cp.kubeconfig))
    op = None
    try:
        log(f"step {asdict(step)}: filling the API server")
        lay, filled = await fill_cluster(kube, step)
        log(f"filled: {filled}")
        op = OperatorProcess(cp.kubeconfig, Path(tempfile.mkdtemp(prefix="homing-scale-op-")))
        started_wall, started = time.time(), time.monotonic()
        op.start(timeout=900)
        cold = time.monotonic() - started
        start_metrics = op.metrics()
        start_lag = m.buckets(start_metrics, "homing_event_loop_lag_seconds")
        rss_ready, _ = m.rss_mb(op.proc.pid)
        log(f"ready in {cold:.1f} s, RSS {rss_ready:.0f} MiB")
        burst = await burst_phase(kube, op, lay, step)
        log(f"burst: {json.dumps({k: v for k, v in burst.items() if not isinstance(v, list)})}")
        rss_now, rss_peak = m.rss_mb(op.proc.pid)
        stored = m.etcd_objects(cp.etcd_url, PM_PREFIX)
        ranks = step.ranks
        details = {
            "step": asdict(step),
            "fill": filled,
            "cold_start_s": cold,
            "start_milestones": start_log_breakdown(op.log_path, started_wall),
            "start_loop_lag_p99_ms": _ms(m.quantile(start_lag, 0.99)),
            "start_loop_lag_worst_bucket_ms": _ms(m.highest(start_lag)),
            "rss_ready_mb": rss_ready,
            "rss_end_mb": rss_now,
            "rss_peak_mb": rss_peak,
            "etcd_objects": len(stored),
            "etcd_bytes": sum(b for _, b in stored),
            **burst,
        }
        row = {
            "nodes": step.nodes,
            "ranks": ranks,
            "live_pods": filled["live_pods"],
            "hypernodes": filled["hypernodes"],
            "cold_start_s": round(cold, 2),
            "rss_mb": round(rss_peak, 1),
            "loop_lag_p99_ms": _round(burst["loop_lag_p99_ms"]),
            "apiserver_webhook_p99_ms": _round(burst["apiserver_webhook_p99_ms"]),
            "homing_webhook_p99_ms": _round(burst["homing_webhook_p99_ms"]),
            "create_throughput_ratio": round(burst["create_with_per_s"] / burst["create_without_per_s"], 3),
            "gang_recorded_s": round(burst["gang_recorded_s"], 2),
            "writes_per_owner_per_s": round(burst["writes_per_owner_per_s"], 3),
            "bytes_per_rank": round(details["etcd_bytes"] / ranks, 1),
            "max_object_bytes": max((b for _, b in stored), default=0),
        }
        return row, details
    finally:
        if op is not None:
            op.stop()
            print(f"operator log: {op.log_path}")
        await kube.close()
        cp.stop()
        print(f"control plane: {cp_workdir}")


async def run_floor_step(step: Step, kind: str) -> tuple[dict, dict]:
    """The same fill and burst with a no-op webhook in homing's place: what the API server
    and this machine cost a webhook, whatever it decides."""
    cp = LocalControlPlane().start()
    kube = await Kube.connect(str(cp.kubeconfig))
    proc = None
    try:
        log(f"floor step {asdict(step)}: filling the API server")
        lay, filled = await fill_cluster(kube, step)
        proc, metrics_port = await noop_floor.start(kube, Path(tempfile.mkdtemp(prefix="homing-scale-noop-")), kind,
                                                    fill.pod_body(lay.burst.ref, 0, "probe"), lay.burst.ref.namespace)
        lag = (lambda: m.buckets(scrape(metrics_port), "homing_event_loop_lag_seconds")) if metrics_port else dict
        lag_before = lag()
        api_before, load_before = await m.apiserver_metrics(kube), os.getloadavg()[0]
        made = await creation_burst(kube, lay)
        api_after, load_after = await m.apiserver_metrics(kube), os.getloadavg()[0]
        lag_hist = m.delta(lag(), lag_before)
        figures = {**creation_figures(made), **webhook_figures(api_before, api_after), "load_avg_1m": [load_before, load_after],
                   "loop_lag_p99_ms": _ms(m.quantile(lag_hist, 0.99)), "loop_lag_samples": m.count(lag_hist)}
        log(f"floor burst: {json.dumps({k: v for k, v in figures.items() if not isinstance(v, list)})}")
        row = {"nodes": step.nodes, "ranks": step.ranks, "live_pods": filled["live_pods"], "webhook": kind,
               "loop_lag_p99_ms": _round(figures["loop_lag_p99_ms"]),
               "apiserver_webhook_p99_ms": _round(figures["apiserver_webhook_p99_ms"]),
               "create_throughput_ratio": round(made.with_rate / made.without_rate, 3)}
        return row, {"step": asdict(step), "webhook": kind, "fill": filled, **figures}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        await kube.close()
        cp.stop()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def merge_results(path: Path, rows: list[dict], key=lambda r: (r["nodes"], r["ranks"], r["live_pods"])) -> list[dict]:
    old = json.loads(path.read_text())["steps"] if path.exists() else []
    mine = {key(r) for r in rows}
    return sorted([r for r in old if key(r) not in mine] + rows, key=lambda r: (r["ranks"], r["nodes"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="500,2000,5000", help=f"named steps, small first: {', '.join(STEPS)}")
    parser.add_argument("--custom", action="append", default=[], help="nodes=,ranks=,live=,hypernodes=,burst=,gang=,per_owner=")
    parser.add_argument("--out", default="scale.json", help="file name under --results")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--webhook", choices=("homing", "noop", "noop-go"), default="homing",
                        help="noop (Python) or noop-go: a webhook that does nothing in homing's place, the machine's floor "
                             "(default --out scale-floor.json)")
    args = parser.parse_args()
    if args.webhook != "homing" and args.out == "scale.json":
        args.out = "scale-floor.json"
    steps = [STEPS[s] for s in args.steps.split(",") if s] if not args.custom else [parse_custom(c) for c in args.custom]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the control plane on the way out
    build_binaries()
    out_dir = Path(args.results)
    out_dir.mkdir(parents=True, exist_ok=True)
    out, detail_path = out_dir / args.out, out_dir / args.out.replace(".json", "-details.json")
    for step in steps:
        row, details = asyncio.run(run_step(step) if args.webhook == "homing" else run_floor_step(step, args.webhook))
        assert tuple(row) == KEYS or args.webhook != "homing"
        rows = merge_results(out, [row], key=lambda r: (r["nodes"], r["ranks"], r["live_pods"], r.get("webhook")))
        out.write_text(json.dumps({"steps": rows}, indent=1) + "\n")
        kept = json.loads(detail_path.read_text())["steps"] if detail_path.exists() else []
        kept = [d for d in kept if (d["step"], d.get("webhook")) != (details["step"], details.get("webhook"))] + [details]
        detail_path.write_text(json.dumps({"steps": sorted(kept, key=lambda d: (d["step"]["ranks"], d["step"]["nodes"]))}, indent=1) + "\n")
        if args.webhook == "homing":
            (out_dir / args.out.replace(".json", ".svg")).write_text(scale_chart.chart(rows))
        log(f"step done: {json.dumps(row)}")
    print(f"wrote {out}, {detail_path.name}" + (f", {out.with_suffix('.svg').name}" if args.webhook == "homing" else ""))


if __name__ == "__main__":
    main()
