"""`make bench-demo`: the demo's story (e2e/demo.py) N times per variant, each run's two
variants from the same dawn layout (layout k for run k), interleaved so the shared
machine's load falls on both alike. Writes bench/results/demo.json, one entry per run and
variant, and prints a table with the targets: homing 8 of 8 home with no re-placement pull
in every run, never more pulls than plain Volcano in the same layout.

    .venv/bin/python bench/demo.py [--runs 5] [--out demo.json]
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from demo import RANKS, VARIANTS, Layout, story  # noqa: E402
from homing_e2e.cluster import VOLCANO_CONTROL_PLANE, build_binaries  # noqa: E402
from homing_e2e.tidal import dump  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def entry(variant: str, run: int, layout: Layout, result: dict) -> dict:
    s = result["summary"]
    training = {k: v for k, v in result["after"].items()}
    return {"variant": variant, "run": run, "layout": {"training": sorted(layout.training), "inference": sorted(layout.inference)},
            "replaced": s["replacements"], "home": s["home"], "feasible": s["feasible"],
            "home_of_feasible": s["home_of_feasible"], "replacement_pulls": s["replacement_pulls"],
            "pull_minutes": s["replacement_pull_minutes"], "all_pulls": s["pulls"], "all_pull_minutes": s["pull_minutes"],
            "ranks_home": sum(1 for k, node in training.items() if result["before"].get(k) == node),
            "misses": s["miss_details"], "by_phase": s["by_phase"]}


def targets(runs: list[dict]) -> list[str]:
    homing = [r for r in runs if r["variant"] == "volcano+homing"]
    plain = {r["run"]: r for r in runs if r["variant"] == "volcano"}
    out = [f"homing {RANKS} of {RANKS} ranks home in every run: "
           f"{'met' if all(r['ranks_home'] == RANKS for r in homing) else 'MISSED'} "
           f"({', '.join(str(r['ranks_home']) for r in homing)})",
           f"homing 0 re-placement pulls in every run: {'met' if all(r['replacement_pulls'] == 0 for r in homing) else 'MISSED'} "
           f"({', '.join(str(r['replacement_pulls']) for r in homing)})"]
    worse = [r["run"] for r in homing if r["run"] in plain and r["replacement_pulls"] > plain[r["run"]]["replacement_pulls"]]
    out.append(f"never more pulls than plain Volcano in the same layout: {'met' if not worse else 'MISSED in runs ' + str(worse)}")
    return out


def table(runs: list[dict]) -> str:
    lines = ["| run | variant | ranks home | re-placement pulls | node-minutes |", "|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["run"], r["variant"])):
        lines.append(f"| {r['run']} | {r['variant']} | {r['ranks_home']} of {RANKS} | {r['replacement_pulls']} | {r['pull_minutes']:.0f} |")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="demo.json")
    args = ap.parse_args()
    build_binaries(*VOLCANO_CONTROL_PLANE)
    runs: list[dict] = []
    for run in range(1, args.runs + 1):
        layout = Layout.drawn(run)
        for variant in VARIANTS:
            started = time.monotonic()
            result = await story(variant, layout, quiet=True)
            runs.append(entry(variant, run, layout, result))
            print(f"run {run} {variant}: {runs[-1]['ranks_home']} of {RANKS} home, "
                  f"{runs[-1]['replacement_pulls']} re-placement pulls ({time.monotonic() - started:.0f} s)", flush=True)
            dump(RESULTS / args.out, {"command": "make bench-demo", "runs": runs, "targets": targets(runs)})
    print(table(runs))
    for line in targets(runs):
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
