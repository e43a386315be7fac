"""Engine benchmark: decision time for one pod of an owner with 4,096 remembered ranks
on a 5,000-node snapshot, and memory per remembered rank; decision time for one pod of
a 1,024-rank super-pod job on a 6,144-node snapshot; decision time of an inference replica while lower-priority training holds
the nodes (victims found over every accelerator pod; free room over the nodes); and of
a rank of a job laid out as NPU jobs are, eight ranks a node; and memory per vacant home
as a restarted process rebuilds them (owners of 4,096 ranks over the nodes, every home
vacant, as bench/scale.py's 1M-rank step finds 980,000 of them).

    .venv/bin/python bench/engine.py [--decisions 5000] [--ranks 4096] [--nodes 5000]

Prints a table and merges its keys into bench/results/engine.json."""
from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import statistics
import time
import tracemalloc
from pathlib import Path

from homing.config import Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import Load
from homing.engine.memory.vacancies import Vacancies
from homing.engine.model import ClusterSnapshot, Health, NodeState, OwnerRef
from homing.engine.placement.decide import decide

RESULTS = Path(__file__).resolve().parent / "results" / "engine.json"


def snapshot(nodes: int, rng: random.Random) -> ClusterSnapshot:
    snap = ClusterSnapshot()
    for i in range(nodes):
        health = Health.UNHEALTHY if rng.random() < 0.01 else Health.HEALTHY
        name = f"node-{i:05d}"
        snap.put(NodeState(name, health, (("rack", str(i // 8)), ("superPod", str(i // 48)))))
    return snap


def owner(i: int) -> OwnerRef:
    return OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name=f"train-{i}", namespace="ai", uid=f"uid-{i:08d}")


def remember(index: MemoryIndex, snap: ClusterSnapshot, who: OwnerRef, ranks: int, rng: random.Random) -> None:
    names = rng.sample(sorted(snap.nodes), ranks)
    now = time.time()
    for r, node in enumerate(names):
        index.record_bind(who, f"worker/{r}", node, snap.topology(node), now)
        index.mark_warm(who, f"worker/{r}", node, now)
    for r in rng.sample(range(ranks), ranks // 100):  # 1% of ranks carry a fault mark
        index.record_fault(who.key, f"worker/{r}", rng.choice(names), now, 3600)


def remember_dense(index: MemoryIndex, snap: ClusterSnapshot, who: OwnerRef, ranks: int, per_node: int) -> None:
    """As NPU jobs run: `per_node` ranks on each node (eight NPUs, a rank each), in rank order."""
    names = sorted(snap.nodes)
    now = time.time()
    for r in range(ranks):
        node = names[r // per_node]
        index.record_bind(who, f"worker/{r}", node, snap.topology(node), now)
        index.mark_warm(who, f"worker/{r}", node, now)


def pod_of(who: OwnerRef, rank: int, **annotations: str) -> dict:
    return {
        "metadata": {
            "namespace": who.namespace,
            "generateName": f"{who.name}-worker-",
            "annotations": {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(rank), **annotations},
            "ownerReferences": [
                {"apiVersion": who.api_version, "kind": who.kind, "name": who.name, "uid": who.uid, "controller": True}
            ],
        },
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"huawei.com/Ascend910": "8"}}}]},
    }


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def time_decisions(index, snap, who, ranks, decisions, settings, rng, churn: bool) -> list[float]:
    """Milliseconds per decide(); with churn, a rank re-binds before every decision
    (a gang restart: bindings and admissions interleave, so cached views go stale)."""
    workloads = WorkloadIndex()
    node_names = sorted(snap.nodes)
    times = []
    for _ in range(decisions):
        rank = rng.randrange(ranks)
        if churn:
            index.record_bind(who, f"worker/{rng.randrange(ranks)}", rng.choice(node_names), (), time.time())
        pod = pod_of(who, rank)
        start = time.perf_counter()
        decision = decide(pod, index, workloads, snap, settings, time.time())
        times.append((time.perf_counter() - start) * 1000)
        assert decision.outcome in ("home", "none"), decision
    return times


def superpod_setup(rng: random.Random) -> tuple[ClusterSnapshot, MemoryIndex, OwnerRef]:
    """128 super-pods of 48 nodes (racks of 8); a 1,024-rank job in blocks of 48 nodes
    (sp-block 384), each block on its own super-pod, ranks shuffled within it."""
    snap = ClusterSnapshot()
    keys = (("rack", "homing.io/rack-id"), ("superPod", "homing.io/superpod-id"))
    for i in range(128 * 48):
        health = Health.UNHEALTHY if rng.random() < 0.01 else Health.HEALTHY
        name = f"sp-node-{i:05d}"
        snap.put(NodeState(name, health, (("rack", str(i // 8)), ("superPod", str(i // 48))), keys, 8))
    index, who, now = MemoryIndex(), owner(9999), time.time()
    first = rng.randrange(100)
    for block in range(-(-1024 // 48)):
        nodes = [f"sp-node-{(first + block) * 48 + j:05d}" for j in range(48)]
        rng.shuffle(nodes)
        for j, node in enumerate(nodes[: min(48, 1024 - block * 48)]):
            rank = f"worker/{block * 48 + j}"
            index.record_bind(who, rank, node, snap.topology(node), now)
    return snap, index, who


def time_superpod(decisions: int, settings: Settings, rng: random.Random) -> list[float]:
    snap, index, who = superpod_setup(rng)
    times = []
    for _ in range(decisions):
        pod = pod_of(who, rng.randrange(1024), **{"sp-block": "384"})
        start = time.perf_counter()
        decision = decide(pod, index, WorkloadIndex(), snap, settings, time.time())
        times.append((time.perf_counter() - start) * 1000)
        assert decision.kind == "super-pod" and decision.domains, decision
    return times


def displacement_setup(nodes: int, free: int, rng: random.Random) -> tuple[ClusterSnapshot, MemoryIndex]:
    """`nodes` 8-NPU nodes; all but `free` held by 8-node training gangs (priority 100),
    one pod per node: every inference admission looks for a victim among all of them."""
    snap, index, now = ClusterSnapshot(), MemoryIndex(), time.time()
    names = [f"node-{i:05d}" for i in range(nodes)]
    for name in names:
        snap.put(NodeState(name, Health.HEALTHY, npus=8))
    held = names[free:]
    rng.shuffle(held)
    for i, node in enumerate(held):
        gang = owner(i // 8)
        index.record_bind(gang, f"worker/{i % 8}", node, (), now)
        index.occupy(f"pod-{i}", node, Load(gang.key, 100, 8))
    return snap, index


def replica_of(deploy: OwnerRef, i: int) -> dict:
    ref = {"apiVersion": deploy.api_version, "kind": deploy.kind, "name": deploy.name, "uid": deploy.uid, "controller": True}
    return {"metadata": {"namespace": deploy.namespace, "name": f"{deploy.name}-{i}", "ownerReferences": [ref]},
            "spec": {"priority": 1000, "containers": [{"name": "serve", "image": "serve:15g",
                                                       "resources": {"requests": {"huawei.com/Ascend910": "8"}}}]}}


def time_displacement(nodes: int, free: int, decisions: int, settings: Settings, rng: random.Random,
                      churn: bool) -> list[float]:
    """Milliseconds per decide() of an inference replica while training holds the cluster:
    victims over every accelerator pod, the burst's choice, the free-room pass over nodes.
    With churn a pod moves before every decision (its node is looked at again)."""
    snap, index = displacement_setup(nodes, free, rng)
    times = []
    for i in range(decisions):
        if churn:
            uid = f"pod-{rng.randrange(nodes - free)}"
            index.occupy(uid, index.pod_node[uid], index.pod_load[uid])
        deploy = OwnerRef(api_version="apps/v1", kind="Deployment", name=f"infer-{i // 16}", namespace="ai",
                          uid=f"dep-{i // 16}")
        pod = replica_of(deploy, i)
        now = time.time()
        start = time.perf_counter()
        decision = decide(pod, index, WorkloadIndex(), snap, settings, now)
        times.append((time.perf_counter() - start) * 1000)
        if decision.burst is not None:
            index.bursts[decision.owner_key] = decision.burst  # what the adapter keeps
        assert "displace" in {t.role for t in decision.terms}, decision
    return times


def bytes_per_rank(ranks_total: int, nodes: int, rng: random.Random) -> float:
    """Memory held by the index per remembered rank (owners of 1,024 ranks)."""
    snap = snapshot(nodes, rng)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    index = MemoryIndex()
    for i in range(ranks_total // 1024):
        remember(index, snap, owner(i), 1024, rng)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert index.rank_count == ranks_total
    return (after - before) / ranks_total


def vacant_bytes_per_home(homes_total: int, nodes: int) -> float:
    """Memory held by the vacant homes per home, rebuilt at once (Vacancies.vacate_all, what
    start-up's rebuild calls): owners of 4,096 ranks in one namespace, one rank a node, each
    owner starting where the last ended (bench/scale_cluster.py's layout)."""
    per_owner = 4096
    homes = {f"mem/uid-{i:04d}": {f"node-{(i * per_owner + r) % nodes:05d}": float(r) for r in range(per_owner)}
             for i in range(homes_total // per_owner)}
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    vacancies = Vacancies()
    count = vacancies.vacate_all(homes, 1e6)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / count


def spread(name: str, samples: list[float]) -> dict[str, float]:
    """A timing's median and 99th percentile, in milliseconds, under the results' key names."""
    return {f"{name}_p50_ms": round(statistics.median(samples), 4), f"{name}_p99_ms": round(percentile(samples, 99), 4)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decisions", type=int, default=5000)
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--memory-ranks", type=int, default=131072)
    ap.add_argument("--vacant-homes", type=int, default=980_000)
    args = ap.parse_args()
    rng = random.Random(7)
    settings = Settings()
    snap = snapshot(args.nodes, rng)
    index = MemoryIndex()
    who = owner(0)
    remember(index, snap, who, args.ranks, rng)

    start = time.perf_counter()
    decide(pod_of(who, 0), index, WorkloadIndex(), snap, settings, time.time())
    cold_ms = (time.perf_counter() - start) * 1000
    steady = time_decisions(index, snap, who, args.ranks, args.decisions, settings, rng, churn=False)
    churn = time_decisions(index, snap, who, args.ranks, args.decisions // 5, settings, rng, churn=True)
    dense_index, dense_owner = MemoryIndex(), owner(1)
    remember_dense(dense_index, snap, dense_owner, args.ranks, 8)
    dense = time_decisions(dense_index, snap, dense_owner, args.ranks, args.decisions, settings, rng, churn=False)
    dense_churn = time_decisions(dense_index, snap, dense_owner, args.ranks, args.decisions // 5, settings, rng, churn=True)
    per_rank = bytes_per_rank(args.memory_ranks, args.nodes, rng)
    per_vacant = vacant_bytes_per_home(args.vacant_homes, args.nodes)
    superpod = time_superpod(args.decisions, settings, rng)
    full = time_displacement(args.nodes, 0, args.decisions // 5, settings, rng, churn=False)
    full_churn = time_displacement(args.nodes, 0, args.decisions // 25, settings, rng, churn=True)
    some_free = time_displacement(args.nodes, 64, args.decisions // 5, settings, rng, churn=False)

    result = {
        **spread("decision", steady),
        "decision_cold_ms": round(cold_ms, 4),
        **spread("decision_churn", churn),
        **spread("decision_dense", dense),
        **spread("decision_dense_churn", dense_churn),
        "bytes_per_rank": round(per_rank, 1),
        "vacant_bytes_per_home": round(per_vacant, 1),
        **spread("superpod_decision", superpod),
        **spread("displacement_full", full),
        **spread("displacement_full_churn", full_churn),
        **spread("displacement_free64", some_free),
        "engine_setup": {
            "ranks": args.ranks,
            "nodes": args.nodes,
            "decisions": args.decisions,
            "memory_ranks": args.memory_ranks,
            "vacant_homes": args.vacant_homes,
            "python": platform.python_version(),
            "machine": platform.machine(),
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    merged = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    merged.update(result)
    RESULTS.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    print(f"{'decision p50 (ms)':<28}{result['decision_p50_ms']:>10}   target p99 <= 1 ms")
    print(f"{'decision p99 (ms)':<28}{result['decision_p99_ms']:>10}")
    print(f"{'first decision (ms)':<28}{result['decision_cold_ms']:>10}   the owner's first admission")
    print(f"{'with churn p50 (ms)':<28}{result['decision_churn_p50_ms']:>10}   a re-bind before every decision")
    print(f"{'with churn p99 (ms)':<28}{result['decision_churn_p99_ms']:>10}")
    print(f"{'8 ranks a node, p50 (ms)':<28}{result['decision_dense_p50_ms']:>10}   as NPU jobs sit: 512 nodes")
    print(f"{'8 ranks a node, p99 (ms)':<28}{result['decision_dense_p99_ms']:>10}   target p99 <= 1 ms")
    print(f"{'  with churn p50 (ms)':<28}{result['decision_dense_churn_p50_ms']:>10}")
    print(f"{'  with churn p99 (ms)':<28}{result['decision_dense_churn_p99_ms']:>10}")
    print(f"{'bytes per rank':<28}{result['bytes_per_rank']:>10}   target <= 1024")
    print(f"{'bytes per vacant home':<28}{result['vacant_bytes_per_home']:>10}   a restart's rebuild, {args.vacant_homes:,} homes")
    print(f"{'super-pod p50 (ms)':<28}{result['superpod_decision_p50_ms']:>10}   1,024 ranks, 6,144 nodes")
    print(f"{'super-pod p99 (ms)':<28}{result['superpod_decision_p99_ms']:>10}   target <= 2 ms")
    print(f"{'displacing, full p50 (ms)':<28}{result['displacement_full_p50_ms']:>10}   {args.nodes} nodes held by lower-priority gangs")
    print(f"{'displacing, full p99 (ms)':<28}{result['displacement_full_p99_ms']:>10}")
    print(f"{'  a bind between, p50 (ms)':<28}{result['displacement_full_churn_p50_ms']:>10}   a pod moved: its node looked at again")
    print(f"{'  a bind between, p99 (ms)':<28}{result['displacement_full_churn_p99_ms']:>10}")
    print(f"{'displacing, 64 free p50 (ms)':<28}{result['displacement_free64_p50_ms']:>10}   the free-room term names them")
    print(f"{'displacing, 64 free p99 (ms)':<28}{result['displacement_free64_p99_ms']:>10}")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
