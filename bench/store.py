"""PlacementMemory write-path benchmark (behaviour.md "Memory", behaviour.md "Operation"): time to encode one owner
and the size of its objects, before (the pydantic `to_status`, one object, all on the
event loop) and after (a snapshot on the loop, compact encoding in a worker thread,
objects of at most 256 KiB of status).

    .venv/bin/python bench/store.py [--repeats 5]

Owners of 1,024, 4,096 and 8,192 ranks (the per-owner bound), each rank on its own
node, with a topology path, 40- or 253-character node names, and fault marks on 1% of
the ranks (`typical`) or a fault mark and a previous node on every rank (`worst`).
Prints a table of medians and writes bench/results/store.json."""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.model import OwnerRef
from homing.placementmemory import MIB, PlacementMemoryStatus, decode, encode, legacy_status, resource_body, snapshot

RESULTS = Path(__file__).resolve().parent / "results" / "store.json"
NOW = 1_800_000_000.0


def node_name(i: int, length: int, tag: str = "n") -> str:
    """A distinct DNS-subdomain node name of exactly `length` characters."""
    return (f"{tag}{i:05d}." + ".".join(["x" * 62] * 5))[:length].rstrip(".").ljust(length, "y")


def owner_memory(ranks: int, name_len: int, worst: bool) -> OwnerMemory:
    owner = OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="llama-train", namespace="ai", uid="uid-0")
    entries = {}
    for i in range(ranks):
        faulty = worst or i % 100 == 0
        entries[f"worker/{i}"] = RankEntry(
            node=node_name(i, name_len), bound_at=NOW - 3600 - i, warm=True,
            topology=(("rack", f"r{i // 8}"), ("superPod", f"sp{i // 64}")),
            previous_node=node_name(i + 1, name_len, "p") if worst else None,
            faults=[FaultMark(node=node_name(i, name_len, "f"), at=NOW - 60)] if faulty else None,
        )
    return OwnerMemory(owner=owner, last_seen=NOW, ranks=entries, pool={node_name(0, name_len): PoolEntry(NOW, True)},
                       stats=Stats(12, 11, 1, 0))


def median_ms(run: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), out


def object_bytes(mem: OwnerMemory, status: dict) -> int:
    """The object as etcd keeps it: compact JSON, metadata and status."""
    body = {**resource_body(mem.owner), "status": status}
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


def before(mem: OwnerMemory, repeats: int) -> dict:
    ms, status = median_ms(lambda: legacy_status(mem).model_dump(mode="json", by_alias=True, exclude_none=True), repeats)
    size = object_bytes(mem, status)
    return {"encode_ms": round(ms, 2), "objects": 1, "max_object_bytes": size, "bytes_per_rank": round(size / len(mem.ranks), 1)}


def after(mem: OwnerMemory, repeats: int) -> dict:
    snap_ms, snap = median_ms(lambda: snapshot(mem), repeats)
    encode_ms, encoded = median_ms(lambda: encode(snap), repeats)
    statuses = encoded.statuses
    # What the client does on the loop for each request: serialise the body, parse the answer.
    dumps_ms = statistics.median(
        max(_timed(lambda s=s: json.loads(json.dumps({"status": s}))) for s in statuses) for _ in range(repeats))
    sizes = [object_bytes(mem, s) for s in statuses]
    decode_ms, _ = median_ms(
        lambda: [decode(PlacementMemoryStatus.model_validate(s), "ai") for s in statuses], max(1, repeats // 2))
    return {
        "snapshot_ms": round(snap_ms, 2), "encode_ms": round(encode_ms, 2), "request_json_ms": round(dumps_ms, 2),
        "decode_ms": round(decode_ms, 2), "objects": len(statuses), "max_object_bytes": max(sizes),
        "bytes_per_rank": round(sum(sizes) / len(mem.ranks), 1),
    }


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    header = (f"{'ranks':>6} {'name':>5} {'marks':>8} | {'before ms':>9} {'MB':>6} {'B/rank':>7} | "
              f"{'loop ms':>7} {'encode ms':>9} {'objects':>7} {'max MB':>6} {'B/rank':>7} {'decode ms':>9}")
    print(header)
    print("-" * len(header))
    for ranks in (1024, 4096, 8192):
        for name_len in (40, 253):
            for worst in (False, True):
                mem = owner_memory(ranks, name_len, worst)
                old, new = before(mem, args.repeats), after(mem, args.repeats)
                rows.append({"ranks": ranks, "node_name_chars": name_len, "marks": "worst" if worst else "typical",
                             "before": old, "after": new})
                loop_ms = max(new["snapshot_ms"], new["request_json_ms"])
                print(f"{ranks:>6} {name_len:>5} {'worst' if worst else 'typical':>8} | {old['encode_ms']:>9.1f} "
                      f"{old['max_object_bytes'] / 1e6:>6.2f} {old['bytes_per_rank']:>7.0f} | {loop_ms:>7.2f} "
                      f"{new['encode_ms']:>9.1f} {new['objects']:>7} {new['max_object_bytes'] / 1e6:>6.2f} "
                      f"{new['bytes_per_rank']:>7.0f} {new['decode_ms']:>9.1f}")
                assert new["max_object_bytes"] < MIB, "an object over 1 MiB"
    result = {
        "setup": {"repeats": args.repeats, "python": platform.python_version(), "machine": platform.machine(),
                  "typical": "a fault mark on 1% of ranks", "worst": "a fault mark and a previous node on every rank",
                  "loop_ms": "the longest slice on the loop: the snapshot, or one request's JSON (body out, answer in)"},
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print("before: to_status() + model_dump on the event loop, one object; after: snapshot on the loop, "
          "encode in a worker thread; medians")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
