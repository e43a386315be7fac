"""One scale step, an earlier commit's operator and this tree's alternated in one session,
with the no-op webhook (the machine's floor) run first:

    .venv/bin/python bench/scale_paired.py --old <rev> [--step 5000] [--rounds 2] [--out scale-paired.json]

The earlier operator runs from a git worktree (its process gets PYTHONPATH=<worktree>/operator
through HOMING_E2E_OPERATOR_PATH); bench/scale.py and the harness are this tree's for both. Writes every run's row and, for each, the API
server's webhook p99 and the creation ratio as ratios to the no-op's of the same session, and
the code its operator ran, read as the run starts (the tree may take a commit between runs)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "e2e"))

from homing_e2e.operator_process import operator_code  # noqa: E402

RESULTS = ROOT / "bench" / "results"
KEPT = ("cold_start_s", "rss_mb", "loop_lag_p99_ms", "apiserver_webhook_p99_ms", "homing_webhook_p99_ms",
        "create_throughput_ratio", "gang_recorded_s")


def worktree(rev: str) -> Path:
    path = Path(tempfile.gettempdir()) / f"homing-paired-{rev[:12]}"
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True)
    return path


def run(step: str, label: str, operator_dir: Path | None, webhook: str, scratch: Path) -> dict:
    env = dict(os.environ)
    code = operator_code(operator_dir) if operator_dir is not None else None
    if operator_dir is not None:  # the operator's process only: the harness stays this tree's
        env["HOMING_E2E_OPERATOR_PATH"] = str(operator_dir)
    out = f"{label}.json"
    cmd = [sys.executable, str(ROOT / "bench" / "scale.py"), "--steps", step, "--out", out, "--results", str(scratch)]
    if webhook != "homing":
        cmd += ["--webhook", webhook]
    print("==", label, " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)
    (row,) = json.loads((scratch / out).read_text())["steps"]
    (detail,) = json.loads((scratch / out.replace(".json", "-details.json")).read_text())["steps"]
    return {"run": label, "operator_code": code, **{k: row.get(k) for k in KEPT if k in row},
            "operator_cpu_ms_per_pod": detail.get("operator_cpu_ms_per_pod"), "load_avg_1m": detail.get("load_avg_1m")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, help="the earlier commit")
    parser.add_argument("--step", default="5000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="scale-paired.json")
    args = parser.parse_args()
    old_rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.old], capture_output=True, text=True,
                             check=True).stdout.strip()
    new_rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
    old_dir = worktree(old_rev) / "operator"
    scratch = Path(tempfile.mkdtemp(prefix="scale-paired-"))
    rows = [run(args.step, "noop", None, "noop", scratch)]
    for i in range(1, args.rounds + 1):
        rows.append(run(args.step, f"old{i}", old_dir, "homing", scratch))
        rows.append(run(args.step, f"new{i}", ROOT / "operator", "homing", scratch))
    floor = rows[0]
    for row in rows[1:]:
        row["webhook_p99_over_noop"] = round(row["apiserver_webhook_p99_ms"] / floor["apiserver_webhook_p99_ms"], 3)
        row["creation_ratio_over_noop"] = round(row["create_throughput_ratio"] / floor["create_throughput_ratio"], 3)
    about = (f"bench/scale_paired.py --old {old_rev} --step {args.step} --rounds {args.rounds}: the no-op webhook, "
             f"then {old_rev} (old) and this tree (new) alternated, one machine, one session; "
             "each run's operator_code is the code its operator ran")
    (RESULTS / args.out).write_text(json.dumps({"about": about, "old": old_rev, "new": new_rev, "runs": rows}, indent=1) + "\n")
    for row in rows:
        print(json.dumps(row))
    print("wrote", RESULTS / args.out)


if __name__ == "__main__":
    main()
