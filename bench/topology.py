"""HyperNode topology benchmark (behaviour.md "Operation", never stall): what TopologySources costs the
event loop for (a) the HyperNode listing at start-up, (b) one node label change and
(c) one HyperNode change, on two fabrics: 200 HyperNodes over 1,600 nodes and 550
HyperNodes in three tiers over 4,000 nodes. Leaves take their nodes by label selector,
regex or exact names in turn; spines and cores take HyperNodes by exact names or regex.

"before" is the code just before BEFORE_CHANGE, read from git: every HyperNode event and every node
label change rebuilt every node's path from scratch (hypernode_topology over all
HyperNodes x all nodes). Its one-by-one listing is estimated from sampled rebuilds
(one rebuild per event), or measured with --full-before N on fabrics of at most N
HyperNodes (about a minute at 200, many at 550).

    .venv/bin/python bench/topology.py [--runs 7] [--full-before 200]

Prints a table and writes bench/results/topology.json."""
from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from homing.config import Settings
from homing.engine.cluster.topology.sources import TopologySources

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "topology.json"
# The code before is the parent of the commit that made the topology incremental, found by its
# subject (a history rewritten keeps subjects, not hashes).
BEFORE_CHANGE = "HyperNode topology kept up to date incrementally"
LEAF = "net.example.com/leaf"
ZONE = "net.example.com/zone"
HOSTNAME = "kubernetes.io/hostname"
SAMPLES = (0.25, 0.5, 0.75, 1.0)  # fractions of the listing at which an old rebuild is timed for the estimate

# (name, leaves, leaves per spine, spines per core, nodes)
FABRICS = (
    ("200 HyperNodes / 1,600 nodes", 178, 9, 10, 1600),
    ("550 HyperNodes / 4,000 nodes", 500, 11, 12, 4000),
)


# -- the fabric -----------------------------------------------------------------------------------

def leaf_name(i: int) -> str:
    return f"leaf-{i:04d}"


def node_name(leaf: int, j: int) -> str:
    return f"n{leaf:04d}-{j}"


def node(name: str, leaf: int) -> dict:
    labels = {HOSTNAME: name, LEAF: f"l{leaf}", ZONE: f"z{leaf % 7}"}
    return {"metadata": {"name": name, "labels": labels}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"huawei.com/Ascend910": "8"}}}


def leaf(i: int, names: list[str]) -> dict:
    """Leaf i takes its nodes by label, by regex or by exact names, in turn."""
    if i % 3 == 0:
        members = [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {LEAF: f"l{i}"}}}}]
    elif i % 3 == 1:
        members = [{"type": "Node", "selector": {"regexMatch": {"pattern": f"n{i:04d}-[0-9]+"}}}]
    else:
        members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in names]
    return {"metadata": {"name": leaf_name(i)}, "spec": {"tier": 1, "members": members}}


def group(name: str, tier: int, children: list[str], by_regex: bool) -> dict:
    if by_regex:
        members = [{"type": "HyperNode", "selector": {"regexMatch": {"pattern": "|".join(children)}}}]
    else:
        members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    return {"metadata": {"name": name}, "spec": {"tier": tier, "members": members}}


def fabric(leaves: int, per_spine: int, per_core: int, nodes: int) -> tuple[list[dict], list[dict]]:
    """(Node objects, HyperNodes): the nodes spread evenly over the leaves."""
    counts = [nodes * (i + 1) // leaves - nodes * i // leaves for i in range(leaves)]
    names = [[node_name(i, j) for j in range(counts[i])] for i in range(leaves)]
    node_objs = [node(n, i) for i in range(leaves) for n in names[i]]
    hypernodes = [leaf(i, names[i]) for i in range(leaves)]
    spines = [f"spine-{s:03d}" for s in range(-(-leaves // per_spine))]
    for s, spine in enumerate(spines):
        children = [leaf_name(i) for i in range(s * per_spine, min(leaves, (s + 1) * per_spine))]
        hypernodes.append(group(spine, 2, children, by_regex=s % 2 == 1))
    for c in range(-(-len(spines) // per_core)):
        hypernodes.append(group(f"core-{c:02d}", 3, spines[c * per_core:(c + 1) * per_core], by_regex=c % 2 == 0))
    return node_objs, hypernodes


def relabelled(name: str, leaf_index: int) -> dict:
    """The node moved to another label-selected leaf."""
    return node(name, leaf_index)


def leaf_taking(leaf_index: int) -> dict:
    """leaf-0003 (label-selected) taking the nodes of `leaf_index` instead of its own."""
    selector = {"labelMatch": {"matchLabels": {LEAF: f"l{leaf_index}"}}}
    return {"metadata": {"name": leaf_name(3)}, "spec": {"tier": 1, "members": [{"type": "Node", "selector": selector}]}}


# -- the code before ------------------------------------------------------------------------------

def before_rev() -> str:
    found = subprocess.run(["git", "log", "--format=%h", "-1", "--fixed-strings", f"--grep={BEFORE_CHANGE}"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.strip()
    if not found:
        raise SystemExit(f"no commit named {BEFORE_CHANGE!r} in this clone's history")
    return f"{found}~1"


def before_sources_class() -> type:
    """TopologySources as before BEFORE_CHANGE, with that revision's hypernode_topology."""
    rev = before_rev()

    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout

    hypernodes = types.ModuleType("homing_before_hypernodes")
    sys.modules[hypernodes.__name__] = hypernodes  # dataclasses look their module up
    exec(compile(source("operator/homing/engine/cluster_topology/hypernodes.py"), "before/hypernodes.py", "exec"), hypernodes.__dict__)
    sources = types.ModuleType("homing_before_sources")
    sys.modules[sources.__name__] = sources
    code = source("operator/homing/engine/cluster_topology/sources.py").replace(
        "from homing.engine.cluster_topology.hypernodes import", f"from {hypernodes.__name__} import")
    exec(compile(code, "before/sources.py", "exec"), sources.__dict__)
    return sources.TopologySources


# -- timing ----------------------------------------------------------------------------------------

def timed(call: Callable[[], object]) -> float:
    """Seconds one call blocks."""
    gc.collect()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def alternating(runs: int, make: Callable[[int], Callable[[], object]]) -> float:
    """Median seconds of `runs` calls, the i-th made by make(i) (changes that go back and forth)."""
    return statistics.median(timed(make(i)) for i in range(runs))


def with_nodes(cls: type, nodes: list[dict]) -> TopologySources:
    src = cls(Settings())
    for n in nodes:
        src.node_changed(n)
    return src


def after(nodes: list[dict], hypernodes: list[dict], runs: int) -> dict:
    at_once = []
    for _ in range(runs):
        src = with_nodes(TopologySources, nodes)
        at_once.append(timed(lambda: src.hypernodes_listed(hypernodes)))  # noqa: B023 (called before src changes)
    src = with_nodes(TopologySources, nodes)
    events = [timed(lambda hn=hn: src.hypernode_changed(hn)) for hn in hypernodes]
    moved = node_name(0, 1)
    return {
        "listing_at_once_ms": statistics.median(at_once) * 1e3,
        "listing_one_by_one_ms": sum(events) * 1e3,
        "listing_event_median_ms": statistics.median(events) * 1e3,
        "listing_event_p99_ms": sorted(events)[int(0.99 * (len(events) - 1))] * 1e3,
        "listing_event_max_ms": max(events) * 1e3,
        "node_label_change_ms": alternating(runs, lambda i: lambda: src.node_changed(relabelled(moved, 3 if i % 2 == 0 else 0))) * 1e3,
        "hypernode_change_ms": alternating(runs, lambda i: lambda: src.hypernode_changed(leaf_taking(6 if i % 2 == 0 else 3))) * 1e3,
    }


def before(cls: type, nodes: list[dict], hypernodes: list[dict], runs: int, full: bool) -> dict:
    src = with_nodes(cls, nodes)

    def rebuild_with(count: int) -> float:
        src.hypernodes = {hn["metadata"]["name"]: hn for hn in hypernodes[:count]}
        return timed(src._rebuild_hypernodes)

    if full:
        fresh = with_nodes(cls, nodes)
        listing = sum(timed(lambda hn=hn: fresh.hypernode_changed(hn)) for hn in hypernodes)
    else:  # one rebuild per event, each over the HyperNodes listed so far: the area under sampled rebuilds
        points = [(0, 0.0)] + [(round(f * len(hypernodes)), rebuild_with(round(f * len(hypernodes)))) for f in SAMPLES]
        listing = sum((k1 - k0) * (t0 + t1) / 2 for (k0, t0), (k1, t1) in zip(points, points[1:]))
    rebuild_with(len(hypernodes))
    moved = node_name(0, 1)
    rounds = max(3, runs // 2)  # a rebuild takes seconds
    return {
        "listing_one_by_one_ms": listing * 1e3,
        "listing_measured": full,
        "node_label_change_ms": alternating(rounds, lambda i: lambda: src.node_changed(relabelled(moved, 3 if i % 2 == 0 else 0))) * 1e3,
        "hypernode_change_ms": alternating(rounds, lambda i: lambda: src.hypernode_changed(leaf_taking(6 if i % 2 == 0 else 3))) * 1e3,
    }


def table(results: list[dict]) -> str:
    rows = [("", "before", "after")]
    for case in results:
        b, a = case["before"], case["after"]
        listing = f"{b['listing_one_by_one_ms'] / 1e3:.1f} s" + ("" if b["listing_measured"] else " (est.)")
        rows += [
            (case["fabric"], "", ""),
            ("  listing, one event per HyperNode: total", listing, f"{a['listing_one_by_one_ms']:.0f} ms"),
            ("  listing, one event: median / p99 / max", f"{b['hypernode_change_ms']:.0f} ms (a rebuild)",
             f"{a['listing_event_median_ms']:.2f} / {a['listing_event_p99_ms']:.1f} / {a['listing_event_max_ms']:.1f} ms"),
            ("  listing at once (hypernodes_listed)", "-", f"{a['listing_at_once_ms']:.0f} ms"),
            ("  one node label change", f"{b['node_label_change_ms']:.0f} ms", f"{a['node_label_change_ms']:.3f} ms"),
            ("  one HyperNode change", f"{b['hypernode_change_ms']:.0f} ms", f"{a['hypernode_change_ms']:.2f} ms"),
        ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7, help="runs per median")
    ap.add_argument("--full-before", type=int, default=0, metavar="N",
                    help="measure the old one-by-one listing, instead of estimating it, on fabrics of at most N HyperNodes")
    args = ap.parse_args()
    old = before_sources_class()
    results = []
    for name, leaves, per_spine, per_core, nodes in FABRICS:
        node_objs, hypernodes = fabric(leaves, per_spine, per_core, nodes)
        results.append({
            "fabric": name,
            "hypernodes": len(hypernodes),
            "nodes": len(node_objs),
            "after": after(node_objs, hypernodes, args.runs),
            "before": before(old, node_objs, hypernodes, args.runs, len(hypernodes) <= args.full_before),
        })
        print(f"{name}: done", file=sys.stderr)
    print(table(results))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "before_rev": before_rev(),
        "runs": args.runs,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "fabrics": results,
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
