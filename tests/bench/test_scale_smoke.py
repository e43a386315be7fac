"""`make bench-scale`'s smallest step as a smoke test: bench/scale.py runs end
to end on its own local control plane and writes results in the format docs/benchmarks.md reads. Figures
are checked for sense (each measured, sizes as asked), never against timing targets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["nodes", "ranks", "live_pods", "hypernodes", "cold_start_s", "rss_mb", "loop_lag_p99_ms",
        "apiserver_webhook_p99_ms", "homing_webhook_p99_ms", "create_throughput_ratio", "gang_recorded_s",
        "writes_per_owner_per_s", "bytes_per_rank", "max_object_bytes"]

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scale")
    subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--steps", "smoke", "--results", str(out)],
                   check=True, timeout=900)
    return out


def test_smallest_step_writes_the_issues_format(results: Path):
    (step,) = json.loads((results / "scale.json").read_text())["steps"]
    assert list(step) == KEYS
    assert (step["nodes"], step["ranks"], step["live_pods"], step["hypernodes"]) == (60, 3000, 200, 6)
    assert (results / "scale.svg").read_text().startswith("<svg")


def test_every_figure_is_measured_and_sensible(results: Path):
    (step,) = json.loads((results / "scale.json").read_text())["steps"]
    assert all(step[k] is not None for k in KEYS), step  # the webhook was called, the loop watched, the gang recorded
    assert step["cold_start_s"] > 0 and step["rss_mb"] > 50  # a Python operator holds tens of MiB at least
    assert step["gang_recorded_s"] >= 0 and step["create_throughput_ratio"] > 0
    assert 0 < step["writes_per_owner_per_s"] <= 2  # batched: about one write per owner per second
    assert 10 < step["bytes_per_rank"] < 1000 and 0 < step["max_object_bytes"] < 1024 * 1024
    (details,) = json.loads((results / "scale-details.json").read_text())["steps"]
    assert details["apiserver_webhook_calls"] >= 100 + 256  # the burst and the gang went through the webhook
    assert details["homing_webhook_calls"] >= 100 + 256


def test_the_burst_takes_the_real_decision_path(results: Path):
    """Every burst and gang pod has a home on a Ready node: a step whose nodes kept the API
    server's not-ready taint measured only the short way out (decision "none")."""
    (details,) = json.loads((results / "scale-details.json").read_text())["steps"]
    decided = details["decisions"]
    assert decided.get("home", 0) >= 0.9 * (100 + 256), decided


@pytest.mark.parametrize("kind", ["noop", "noop-go"])
def test_the_floor_runs_the_same_burst_through_a_webhook_that_does_nothing(tmp_path: Path, kind: str):
    """`--webhook noop` / `noop-go`: what any webhook costs on the machine, measured the same way."""
    subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), "--steps", "smoke", "--webhook", kind,
                    "--results", str(tmp_path)], check=True, timeout=900)
    (step,) = json.loads((tmp_path / "scale-floor.json").read_text())["steps"]
    assert step["webhook"] == kind and (step["nodes"], step["ranks"]) == (60, 3000)
    assert step["apiserver_webhook_p99_ms"] is not None and 0 < step["create_throughput_ratio"]
    assert (step["loop_lag_p99_ms"] is not None) is (kind == "noop")  # Go has no event loop to lag
    (details,) = json.loads((tmp_path / "scale-floor-details.json").read_text())["steps"]
    assert details["apiserver_webhook_calls"] >= 100 + 256  # the same pods went through it
