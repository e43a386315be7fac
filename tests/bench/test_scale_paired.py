"""bench/scale_paired.py's record of what each run measured. Its file named the tree's commit
when the script started as "new", though the tree took a commit between runs and the new runs
ran that commit's operator (2026-12-07, scale-paired-relist.json)."""
from __future__ import annotations

import json
import types


def test_each_run_names_the_code_its_operator_ran_read_as_the_run_starts(bench_script, checkout, tmp_path, monkeypatch):
    paired = bench_script("scale_paired")
    first = checkout.commit()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    seen: dict[str, str] = {}

    def scale_run(cmd, env, check, cwd):  # bench/scale.py, played: its two files, and the tree moves on meanwhile
        seen["operator"] = env.get("HOMING_E2E_OPERATOR_PATH", "")
        out = cmd[cmd.index("--out") + 1]
        (scratch / out).write_text(json.dumps({"steps": [{"rss_mb": 900.0, "apiserver_webhook_p99_ms": 100.0}]}))
        (scratch / out.replace(".json", "-details.json")).write_text(json.dumps({"steps": [{"operator_cpu_ms_per_pod": 8.0}]}))
        seen["runs"] = seen.get("runs", "") + "."
        checkout.write(f"x = {len(seen['runs']) + 1}\n")
        checkout.commit()

    monkeypatch.setattr(paired, "subprocess", types.SimpleNamespace(run=scale_run))
    row = paired.run("smoke", "new1", checkout.operator, "homing", scratch)
    assert seen["operator"] == str(checkout.operator)
    assert row["operator_code"] == {"commit": first, "uncommitted_changes": False, "this_tree": False}
    assert (row["rss_mb"], row["operator_cpu_ms_per_pod"]) == (900.0, 8.0)
    assert paired.run("smoke", "noop", None, "noop", scratch)["operator_code"] is None  # the no-op runs no operator
