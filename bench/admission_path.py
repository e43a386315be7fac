"""Admission path benchmark: the CPU one review costs through kopf's function and homing's
handler, the patch rebuilt by kopf (a deep copy of the pod and a diff of the whole copy, the pod's
managedFields included) against the patch handed back to homing's server, alternated in one run.

    .venv/bin/python bench/admission_path.py [--reviews 300] [--rounds 8] [--nodes 304]

Pods are shaped by a real kube-apiserver (a server-side dry run of a training rank and an
inference replica returns them as a webhook receives them, managedFields included); kopf's function
is the one kopf hands to a webhook server, taken through its public server protocol from a kopf
operator started against that API server with homing's handler alone registered. Each review is
decided against remembered homes on `--nodes` nodes, as a dry run: it leaves no promise behind,
so every review meets the same memory (a real one would change the next one's decision). Prints a table and writes
bench/results/admission-path.json."""
from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jsonpatch
import kopf

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from homing.config import Settings  # noqa: E402
from homing.engine.memory.index import MemoryIndex  # noqa: E402
from homing.engine.model import Health, NodeState, OwnerRef  # noqa: E402
from homing.kube import handlers  # noqa: E402
from homing.kube.admission.admission_server import WEBHOOK_ID, answer_review  # noqa: E402
from homing.kube.admission.admitter import Admitter  # noqa: E402
from homing.kube.signals import logs
from homing.kube.state.cluster import ClusterState  # noqa: E402
from homing_e2e.cluster import BIN_DIR, LocalControlPlane  # noqa: E402
from homing_e2e.tidal_schedulers import pod_spec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "admission-path.json"
NS = "ai"
JOB = OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train-0", namespace=NS, uid="job-uid-0")
REPLICAS = OwnerRef(api_version="apps/v1", kind="ReplicaSet", name="qwen-5d8f7", namespace=NS, uid="rs-uid-0")
RANKS = 16


def ref(owner: OwnerRef) -> dict:
    return {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid,
            "controller": True, "blockOwnerDeletion": True}


def as_sent(cp: LocalControlPlane) -> dict[str, dict]:
    """A training rank and an inference replica as the API server hands them to a webhook."""
    kubectl = [str(BIN_DIR / "kubectl"), "--kubeconfig", str(cp.kubeconfig)]
    subprocess.run([*kubectl, "create", "namespace", NS], check=True, capture_output=True)
    for name, value in (("training", 100), ("inference", 1000)):
        subprocess.run([*kubectl, "create", "priorityclass", name, f"--value={value}"], check=True, capture_output=True)
    rank = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "train-0-worker-3", "namespace": NS, "ownerReferences": [ref(JOB)],
        "labels": {"volcano.sh/job-name": "train-0", "volcano.sh/task-spec": "worker", "volcano.sh/queue-name": "default"},
        "annotations": {"volcano.sh/task-index": "3", "volcano.sh/task-spec": "worker", "scheduling.k8s.io/group-name": "train-0"}},
        "spec": pod_spec("volcano", "training", "train", "train-llama:30g")}
    replica = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "generateName": "qwen-5d8f7-", "namespace": NS, "ownerReferences": [ref(REPLICAS)],
        "labels": {"app": "qwen", "pod-template-hash": "5d8f7"}},
        "spec": pod_spec("volcano", "inference", "serve", "serve:15g")}
    out = {}
    for kind, pod in (("training rank", rank), ("inference replica", replica)):
        got = subprocess.run([*kubectl, "create", "--dry-run=server", "--show-managed-fields", "-o", "json", "-f", "-"],
                             input=json.dumps(pod), capture_output=True, text=True, check=True)
        out[kind] = json.loads(got.stdout)
        out[kind]["metadata"].pop("uid", None)  # given after admission, not before
        out[kind]["metadata"].pop("creationTimestamp", None)
    return out


def admitter(nodes: int) -> Admitter:
    """Remembered homes: the job's 16 ranks and the pool's 16 replicas on a cluster of `nodes`."""
    settings = Settings()
    index, cluster = MemoryIndex(), ClusterState(settings)
    names = [f"node-{i:04d}" for i in range(nodes)]
    for name in names:
        cluster.snapshot.put(NodeState(name, Health.HEALTHY, npus=8))
    now = time.time() - 60
    for r in range(RANKS):
        index.record_bind(JOB, f"worker/{r}", names[r], (), now)
        index.mark_warm(JOB, f"worker/{r}", names[r], now)
        index.record_bind(REPLICAS, None, names[RANKS + r], (), now)  # a pool: replicas have no rank
    return Admitter(settings, index, cluster)


class Handover:
    """A webhook server by kopf's public protocol that serves nothing: it keeps kopf's function."""

    def __init__(self) -> None:
        self.fn: asyncio.Future = asyncio.get_running_loop().create_future()

    async def __call__(self, fn: kopf.WebhookFn):
        self.fn.set_result(fn)
        yield kopf.WebhookClientConfig(url="https://localhost:1")
        await asyncio.Event().wait()


async def kopfs_function(nodes: int) -> tuple[kopf.WebhookFn, asyncio.Event, asyncio.Task]:
    registry, handover, stop = kopf.OperatorRegistry(), Handover(), asyncio.Event()
    kopf.on.login(registry=registry)(kopf.login_with_kubeconfig)
    kopf.on.mutate("", "v1", "pods", id=WEBHOOK_ID, operations=["CREATE"], ignore_failures=True,
                   side_effects=False, registry=registry)(handlers.admit_pod)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: object) -> None:
        settings.admission.server, settings.admission.managed = handover, None
        settings.posting.enabled = False

    memo = kopf.Memo(runtime=SimpleNamespace(admitter=admitter(nodes)))
    task = asyncio.create_task(kopf.operator(registry=registry, clusterwide=True, standalone=True, memo=memo, stop_flag=stop))
    return await asyncio.wait_for(handover.fn, 60), stop, task


def review(pod: dict, i: int) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": f"review-{i}", "operation": "CREATE", "object": copy.deepcopy(pod), "dryRun": True,
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "namespace": NS,
                        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"}}}


def patched(pod: dict, answer: dict) -> dict:
    ops = json.loads(base64.b64decode(answer["response"]["patch"])) if answer["response"].get("patch") else []
    return jsonpatch.apply_patch(pod, ops)


async def time_block(path, fn, pod: dict, reviews: int) -> float:
    """CPU milliseconds per review over `reviews` reviews of `pod` (built beforehand, not timed)."""
    built = [review(pod, i) for i in range(reviews)]
    started = time.process_time()
    for r in built:
        await path(fn, r)
    return (time.process_time() - started) / reviews * 1000


async def kopfs_patch(fn, r: dict) -> dict:
    return await fn(r, webhook=WEBHOOK_ID)  # no homing server around it: the handler fills kopf's Patch


async def handed_back(fn, r: dict) -> dict:
    return await answer_review(fn, r, webhook=WEBHOOK_ID)


KOPF, OURS = "kopf's patch", "handed back"
PATHS = {KOPF: kopfs_patch, OURS: handed_back}


async def run(args: argparse.Namespace) -> dict:
    cp = LocalControlPlane().start()
    os.environ["KUBECONFIG"] = str(cp.kubeconfig)
    try:
        pods = as_sent(cp)
        fn, stop, task = await kopfs_function(args.nodes)
        try:
            results: dict = {}
            for kind, pod in pods.items():
                same = [patched(pod, await p(fn, review(pod, 0))) for p in PATHS.values()]
                assert same[0] == same[1] and same[0]["spec"].get("affinity"), f"{kind}: the two paths patch differently"
                blocks: dict[str, list[float]] = {name: [] for name in PATHS}
                for _ in range(args.rounds):  # alternated: the machine's noise falls on both alike
                    for name, p in PATHS.items():
                        blocks[name].append(await time_block(p, fn, pod, args.reviews))
                med = {name: statistics.median(b) for name, b in blocks.items()}
                results[kind] = {
                    "review_bytes": len(json.dumps(review(pod, 0))),
                    "managed_fields_bytes": len(json.dumps(pod["metadata"].get("managedFields", []))),
                    "cpu_ms_per_review": {name: round(v, 4) for name, v in med.items()},  # median of the blocks
                    "blocks_ms": {name: [round(x, 4) for x in b] for name, b in blocks.items()},
                    "ratio": round(med[OURS] / med[KOPF], 3),  # handed back / kopf's patch
                }
            return results
        finally:
            stop.set()
            await asyncio.wait_for(task, 30)
    finally:
        cp.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=300, help="reviews per timed block")
    parser.add_argument("--rounds", type=int, default=8, help="blocks per path, alternated")
    parser.add_argument("--nodes", type=int, default=304)
    args = parser.parse_args()
    real, sys.stdout = sys.stdout, open(os.devnull, "w")
    logs.configure("info")  # each review's log line rendered as the operator renders it, to nowhere
    sys.stdout = real
    results = asyncio.run(run(args))
    print(f"CPU ms per review, median of {args.rounds} blocks of {args.reviews}")
    print(f"{'pod':<18} {'review bytes':>12} {'managedFields':>13} {KOPF:>13} {OURS:>12} {'ratio':>6}")
    for kind, r in results.items():
        ms = r["cpu_ms_per_review"]
        print(f"{kind:<18} {r['review_bytes']:>12} {r['managed_fields_bytes']:>13} {ms[KOPF]:>13} {ms[OURS]:>12} {r['ratio']:>6}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
                                   "python": platform.python_version(), "reviews_per_block": args.reviews,
                                   "rounds": args.rounds, "nodes": args.nodes, "pods": results}, indent=2) + "\n")
    print(f"written {RESULTS}")


if __name__ == "__main__":
    main()
