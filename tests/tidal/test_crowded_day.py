"""Issue 44's crowded day, reduced: 24 nodes where the inference peak displaces about half the
training, three training images several gangs share, the nights scaled in at once, a node fault.
Pulls first: with homing, the re-placements pull no more minutes than Volcano's gang-aware
action alone pulls on the same layout (behaviour.md "Image labels"). The whole days, at 48 and
304 nodes and with every scheduler, are bench/tidal.py's (`make bench-tidal`)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]


def bench_tidal():
    spec = importlib.util.spec_from_file_location("bench_tidal", ROOT / "bench" / "tidal.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


async def test_homing_pulls_no_more_than_the_gang_aware_action_alone(binaries):
    tidal = bench_tidal()
    alone = await tidal.run("volcano+gangpreempt", "crowded", superpods=3)
    homing = await tidal.run("volcano+gangpreempt+homing", "crowded", superpods=3)
    lines = "\n".join(str(line) for line in homing.get("pull_lines", []))
    assert homing["replacement_pull_minutes"] <= alone["replacement_pull_minutes"], (
        f"homing {homing['replacement_pull_minutes']} re-placement pull minutes against "
        f"{alone['replacement_pull_minutes']} alone; homing's pulls:\n{lines}")
