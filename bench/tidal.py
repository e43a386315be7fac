"""`make bench-tidal`: one scripted tidal day on the real Volcano scheduler, run three
ways in one invocation (Volcano; Volcano with image locality; Volcano with homing) on
64 fake 8-NPU nodes, then the homing run again on 304 nodes with Volcano's default
candidate sampling and with sampling off. Writes bench/results/tidal.json, a chart
(bench/results/tidal.svg) and the table for docs/benchmarks.md.

    .venv/bin/python bench/tidal.py [--superpods 8] [--repeats 3] [--large-superpods 38] [--skip-large]

Each 64-node variant runs --repeats times, interleaved (so the shared machine's load
falls on all three alike); a variant's figures are the medians of its repeats, and
every repeat's own summary is kept under "repeats".
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from homing_e2e.cluster import build_binaries  # noqa: E402
from homing_e2e.tidal import NODES_PER_SUPERPOD, TidalCluster, dump  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
IMAGES = {"train-a:30g": 30.0, "train-b:25g": 25.0, "train-c:40g": 40.0, "serve:15g": 15.0}
BANDWIDTH_GBPS = 1.0  # per node, from a registry shared by the whole cluster
VARIANTS = ("volcano", "volcano+imagelocality", "volcano+homing")
STEPS = ("morning wave 1", "morning wave 2", "night", "faults", "recovery", "next morning", "next night")  # the day's order


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


async def day(c: TidalCluster) -> None:
    """The scripted day. Sizes follow the cluster: 3/4 of it training, inference tides."""
    nodes = c.superpods * NODES_PER_SUPERPOD
    jobs = max(1, nodes * 3 // 4 // 16)
    base = max(2, nodes // 8)
    trains = [("train-a:30g", 64), ("train-b:25g", None), ("train-c:40g", None)]
    for j in range(jobs):
        image, sp_block = trains[j % len(trains)]
        await c.training_job(f"train-{j}", 16, image, sp_block=sp_block if j == 0 else None)  # train-0: a super-pod job
    await c.inference("qwen", base, "serve:15g")
    await c.settle(quiet=4, at_least=8)
    log(f"  dawn: {jobs} training jobs of 16, inference {base}")
    restarts = await c.count_restarts("dawn", {})
    for step, replicas in (("morning wave 1", base + nodes // 4), ("morning wave 2", base + nodes // 2), ("night", base)):
        c.recorder.phase = step
        await c.scale("qwen", replicas)
        await c.settle(quiet=4, at_least=6)
        restarts = await c.count_restarts(step, restarts)
        log(f"  {step}: inference {replicas}")
    hosting = [p.node for p in c.recorder.pods.values() if p.node and p.key.startswith("train-")]
    faulty = sorted(set(hosting))[:: max(1, len(set(hosting)) // 2)][:2]
    c.recorder.phase = "faults"
    for node in faulty:
        await c.fault(node, down=True)
    await c.settle(quiet=4, at_least=20)  # tainted at once, evicted 5 s later (the second node up to 10 s after: eviction rate), jobs restart
    restarts = await c.count_restarts("faults", restarts)
    log(f"  faults: {faulty} NotReady")
    c.recorder.phase = "recovery"
    for node in faulty:
        await c.fault(node, down=False)
    await c.settle(quiet=4, at_least=6)
    restarts = await c.count_restarts("recovery", restarts)
    log("  faults recovered")
    for step, replicas in (("next morning", base + nodes // 4), ("next night", base)):
        c.recorder.phase = step
        await c.scale("qwen", replicas)
        await c.settle(quiet=4, at_least=6)
        restarts = await c.count_restarts(step, restarts)
        log(f"  {step}: inference {replicas}")


PREFERENCES = ("image-warm", "vacant-homes", "displace-few")  # SPEC 4.4, switchable


def ablation(variant: str) -> tuple[str, dict[str, str]]:
    """'volcano+homing-no-image-warm' -> the base variant and the operator's environment
    that switches that SPEC 4.4 preference off (what each one buys)."""
    base, env = variant, {}
    for pref in PREFERENCES:
        if f"-no-{pref}" in base:
            base = base.replace(f"-no-{pref}", "")
            env[f"HOMING_PREFERENCES__{pref.replace('-', '_').upper()}"] = "false"
    return base, env


async def run(variant: str, superpods: int, volcano_args: tuple[str, ...] = ()) -> dict:
    log(f"{variant} on {superpods * NODES_PER_SUPERPOD} nodes {' '.join(volcano_args)}")
    base, env = ablation(variant)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the operator process inherits it
    c = await TidalCluster(base, superpods, IMAGES, BANDWIDTH_GBPS, volcano_args=volcano_args).start()
    try:
        await day(c)
        result = {**c.recorder.summary(), "gang_restarts": await c.gang_restarts()}
    finally:
        await c.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    log(f"  -> {result}")
    return result


def add_counts(counts) -> dict:
    """Adds up {label: n} (or {phase: {label: n}}) dictionaries."""
    out: dict = {}
    for c in counts:
        for k, v in c.items():
            out[k] = add_counts([out.get(k, {}), v]) if isinstance(v, dict) else out.get(k, 0) + v
    return out


def medians(repeats: list[dict]) -> dict:
    """One figure per field: the median over the repeats (numbers only); the repeats kept whole."""
    out: dict = {}
    for field, value in repeats[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [r[field] for r in repeats if r.get(field) is not None]
            out[field] = round(statistics.median(values), 4) if values else None
    for field in ("misses", "by_phase", "pulls_by_phase", "restarts_by_phase"):  # counts: summed over the repeats
        out[field] = add_counts(r.get(field) or {} for r in repeats)
    out["repeats"] = repeats
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def table(data: dict) -> str:
    cols = ["replacements", "home", "domain", "elsewhere", "feasible", "home_of_feasible", "home_rate",
            "feasible_home_rate", "pulls", "pull_minutes", "replacement_pulls", "replacement_pull_minutes",
            "create_to_scheduled_p50_s", "create_to_scheduled_p99_s", "misses"]
    lines = ["| run | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, r in data["runs"].items():
        lines.append(f"| {name} | " + " | ".join(str(r.get(c)) for c in cols) + " |")
    for name, r in data.get("large", {}).items():
        lines.append(f"| {name} | " + " | ".join(str(r.get(c)) for c in cols) + " |")
    lines += ["", "Re-placements by step of the day (summed over the repeats): total / home / feasible, and why home was not", "",
              "| run | step | re-placements | home | feasible | home not feasible because |", "|---|---|---|---|---|---|"]
    for name, r in [*data["runs"].items(), *data.get("large", {}).items()]:
        for step, row in sorted((r.get("by_phase") or {}).items(), key=lambda kv: STEPS.index(kv[0]) if kv[0] in STEPS else 99):
            why = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in sorted(row.items()) if k.startswith("blocked:"))
            lines.append(f"| {name} | {step} | {row['replacements']} | {row['home']} | {row['feasible']} | {why} |")
    return "\n".join(lines)


def chart(data: dict) -> str:
    """Grouped bars: home rate, feasible home rate, and pull minutes relative to plain Volcano."""
    runs = data["runs"]
    base_pull = runs["volcano"]["replacement_pull_minutes"] or 1
    metrics = [("home rate", lambda r: r["home_rate"] or 0), ("feasible home rate", lambda r: r["feasible_home_rate"] or 0),
               ("re-placement pull minutes / Volcano's", lambda r: r["replacement_pull_minutes"] / base_pull)]
    colors = {"volcano": "#9aa5b1", "volcano+imagelocality": "#5b8def", "volcano+homing": "#2e9e5b"}
    w, h, left, bottom, group = 640, 300, 50, 250, 190
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16" font-size="13">Tidal day on Volcano, {data["nodes"]} nodes (higher is better, except pulls)</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{w - 10}" y2="{bottom}" stroke="black"/>']
    for g, (label, fn) in enumerate(metrics):
        x0 = left + 10 + g * group
        for i, (name, r) in enumerate(runs.items()):
            value = max(0.0, min(1.2, fn(r)))
            bar = value / 1.2 * 200
            x = x0 + i * 50
            out.append(f'<rect x="{x}" y="{bottom - bar:.1f}" width="40" height="{bar:.1f}" fill="{colors[name]}"/>')
            out.append(f'<text x="{x + 20}" y="{bottom - bar - 4:.1f}" text-anchor="middle">{fn(r):.2f}</text>')
        out.append(f'<text x="{x0 + 70}" y="{bottom + 16}" text-anchor="middle">{label}</text>')
    for i, name in enumerate(runs):
        out.append(f'<rect x="{left + i * 180}" y="{h - 22}" width="12" height="12" fill="{colors[name]}"/>')
        out.append(f'<text x="{left + i * 180 + 16}" y="{h - 12}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--superpods", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large-superpods", type=int, default=38)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--render-only", action="store_true", help="redraw the table and chart from tidal.json")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS),
                    help="also volcano+homing-no-<preference> (preferences: " + ", ".join(PREFERENCES) + ")")
    ap.add_argument("--out", default="tidal.json", help="results file under bench/results/ (another name: no chart)")
    args = ap.parse_args()
    if args.render_only:
        return render(json.loads((RESULTS / "tidal.json").read_text()))
    build_binaries()
    repeats: dict[str, list[dict]] = {v: [] for v in args.variants}
    for _ in range(args.repeats):
        for variant in args.variants:
            repeats[variant].append(await run(variant, args.superpods))
    runs = {variant: medians(rs) for variant, rs in repeats.items()}
    if args.out != "tidal.json":
        data = {"nodes": args.superpods * NODES_PER_SUPERPOD, "repeats": args.repeats, "runs": runs}
        dump(RESULTS / args.out, data)
        print(table(data))
        return
    data = {
        "nodes": args.superpods * NODES_PER_SUPERPOD,
        "image_gb": sorted(IMAGES.values()),
        "bandwidth_gbps": BANDWIDTH_GBPS,
        "repeats": args.repeats,
        "runs": runs,
        "homing_vs_volcano": {
            "pull_minutes_ratio": ratio(runs["volcano+homing"]["pull_minutes"], runs["volcano"]["pull_minutes"]),
            "replacement_pull_minutes_ratio": ratio(
                runs["volcano+homing"]["replacement_pull_minutes"], runs["volcano"]["replacement_pull_minutes"]),
            "create_to_scheduled_p50_ratio": ratio(runs["volcano+homing"]["create_to_scheduled_p50_s"], runs["volcano"]["create_to_scheduled_p50_s"]),
        },
    }
    if not args.skip_large:
        nodes = args.large_superpods * NODES_PER_SUPERPOD
        data["large"] = {
            f"volcano+homing@{nodes} (default sampling)": await run("volcano+homing", args.large_superpods),
            f"volcano+homing@{nodes} (--percentage-nodes-to-find=100)": await run(
                "volcano+homing", args.large_superpods, ("--percentage-nodes-to-find=100", f"--minimum-feasible-nodes={nodes}")),
        }
    dump(RESULTS / "tidal.json", data)
    render(data)


def render(data: dict) -> None:
    (RESULTS / "tidal.svg").write_text(chart(data))
    (RESULTS / "tidal.md").write_text(table(data) + "\n")
    print(table(data))
    print(f"wrote {RESULTS / 'tidal.json'}, tidal.svg, tidal.md")


if __name__ == "__main__":
    asyncio.run(main())
