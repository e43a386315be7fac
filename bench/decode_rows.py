"""PlacementMemory's compact rows read back (start-up reads every row of every owner): this
tree's decode against another revision's, interleaved, on one 4,096-rank owner.

    .venv/bin/python bench/decode_rows.py --other <rev> [--rounds 60]

Prints the minimum and median per read of each and writes bench/results/decode-rows.json."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))

from homing.engine.memory.entries import FaultMark, OwnerMemory, RankEntry  # noqa: E402
from homing.engine.model import OwnerRef  # noqa: E402
from homing.placementmemory.schema import PlacementMemoryStatus  # noqa: E402

# the modules, not the package's functions of the same names
encode = importlib.import_module("homing.placementmemory.encode")
decode = importlib.import_module("homing.placementmemory.decode")
RESULTS = ROOT / "bench" / "results" / "decode-rows.json"


def other_decode(rev: str):
    text = subprocess.run(["git", "show", f"{rev}:operator/homing/placementmemory/decode.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "other_decode.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("other_decode", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module.__name__] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def statuses(ranks: int) -> list[PlacementMemoryStatus]:
    rng, now = random.Random(1), time.time()
    mem = OwnerMemory(owner=OwnerRef(api_version="batch/v1", kind="Job", name="j", namespace="ns", uid="u"), last_seen=now)
    for r in range(ranks):
        mem.ranks[str(r)] = RankEntry(
            node=f"n{rng.randrange(5000)}", bound_at=now - rng.randrange(10000), topology=(("superpod", f"s{r // 64}"),),
            previous_node=f"n{rng.randrange(5000)}" if r % 3 == 0 else None, warm=r % 2 == 0,
            faults=[FaultMark(node=f"n{rng.randrange(5000)}", at=now - 5)] if r % 7 == 0 else None)
    return [PlacementMemoryStatus.model_validate(s) for s in encode.encode(encode.snapshot(mem)).statuses]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True, help="the revision to compare with")
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    other, rows = other_decode(args.other), statuses(4096)
    assert [other._compact(s) for s in rows] == [decode._compact(s) for s in rows], "the two read differently"
    times: dict[str, list[float]] = {"this": [], "other": []}
    for _ in range(args.rounds):
        for name, module in (("this", decode), ("other", other)):
            start = time.perf_counter()
            for s in rows:
                module._compact(s)
            times[name].append((time.perf_counter() - start) * 1000)
    result = {name: {"min_ms": round(min(t), 2), "median_ms": round(statistics.median(t), 2)} for name, t in times.items()}
    result |= {"other_rev": args.other, "ranks": 4096, "rounds": args.rounds,
               "ratio_min": round(min(times["other"]) / min(times["this"]), 2)}
    print(json.dumps(result, indent=2))
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
