"""The tidal story on the kind cluster's real kubelets, with Volcano (volcano-up.sh) and
homing (install.sh) installed as users install them (docs/kind.md, "Volcano and the tide"):

  1. a gang-scheduled Volcano training Job fills every free NPU of the workers, four to a
     rank (half a worker); each rank's node is its home;
  2. inference scales out: Volcano preempts a rank, and the Job restarts as a whole gang
     (PodEvicted -> RestartJob), which waits: one rank's room is now inference's;
  3. inference scales in: the gang binds again, and every rank should be back on its home.

The objects follow manifests/tidal (its PriorityClasses as they are; the Job's and the
Deployment's shape at kind's size: four NPUs a pod, one replica, a local image, restricted Pod
Security's container settings). With --compare the same story runs again in a namespace
homing does not serve: where Volcano alone puts the restarted ranks.

Exits 1 when, with homing, a rank did not go back to its home, homing's decision did not
ask for it, or the day did not happen (no preemption, no gang restart). Writes
bench/results/kind-tidal.json and prints it.

    .venv/bin/python e2e/kind/tidal.py [--compare]
"""
from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

from kindkube import E2E, KUBECONFIG, NPU, RESTRICTED, decision_reason, delete_namespace, fresh_namespace, report, workers

from homing.kube.client import MERGE_PATCH, Kube
from homing_e2e.objects import eventually

PRIORITIES = E2E.parent / "manifests" / "tidal" / "common" / "priorityclasses.yaml"
NS, JOB, INFER = "homing-tidal", "train", "infer"
IMAGE = "homing:local"  # loaded on every node by kind-up.sh: the story is about places, not pulls
TIMEOUT = 300.0
POD_NPUS = 4  # a rank and an inference replica each: half a worker (make kind-install's demo ranks hold some)


def container(name: str) -> dict:
    return {"name": name, "image": IMAGE, "imagePullPolicy": "IfNotPresent", "command": ["/bin/sleep", "infinity"],
            "resources": {"requests": {NPU: str(POD_NPUS)}, "limits": {NPU: str(POD_NPUS)}}, "securityContext": RESTRICTED}


async def free_ranks(kube: Kube, nodes: list[str]) -> int:
    """How many ranks the workers' free NPUs hold (what other pods ask for is taken)."""
    free = {n: int(((await kube.request("GET", f"/api/v1/nodes/{n}"))["status"].get("allocatable") or {}).get(NPU, 0)) for n in nodes}
    for p in (await kube.request("GET", "/api/v1/pods"))["items"]:
        node = p["spec"].get("nodeName")
        if node in free and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            free[node] -= sum(int(((c.get("resources") or {}).get("requests") or {}).get(NPU, 0)) for c in p["spec"]["containers"])
    return sum(max(0, n) // POD_NPUS for n in free.values())


def training_job(ranks: int) -> dict:
    """manifests/tidal/common/training-job.yaml at kind's size."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": JOB, "namespace": NS},
        "spec": {"schedulerName": "volcano", "minAvailable": ranks, "maxRetry": 1000, "priorityClassName": "training-low",
                 "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                 "tasks": [{"name": "worker", "replicas": ranks, "template": {"spec": {
                     "priorityClassName": "training-low", "terminationGracePeriodSeconds": 0, "restartPolicy": "Never",
                     "containers": [container("train")]}}}]},
    }


def inference() -> dict:
    """manifests/tidal/common/inference-deployment.yaml, at no replicas until the tide comes."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": INFER, "namespace": NS},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": INFER}}, "template": {
            "metadata": {"labels": {"app": INFER}},
            "spec": {"schedulerName": "volcano", "priorityClassName": "inference-high", "terminationGracePeriodSeconds": 0,
                     "containers": [container("serve")]}}},
    }


async def pods(kube: Kube, selector: str) -> list[dict]:
    items = (await kube.request("GET", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", selector)]))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running(pod: dict) -> bool:
    states = [c.get("state") or {} for c in (pod.get("status") or {}).get("containerStatuses") or ()]
    return bool(states) and all("running" in s for s in states)


def rank_of(pod: dict) -> str:
    return (pod["metadata"].get("annotations") or {}).get("volcano.sh/task-index", "?")


async def ranks_running(kube: Kube, ranks: int, uids: set[str] = frozenset()) -> dict[str, dict] | None:
    """Every rank running, none of them a pod in `uids` (an earlier start's)."""
    got = {rank_of(p): p for p in await pods(kube, f"volcano.sh/job-name={JOB}") if running(p) and p["metadata"]["uid"] not in uids}
    return got if len(got) == ranks else None


async def scale(kube: Kube, replicas: int) -> None:
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{NS}/deployments/{INFER}/scale", body={"spec": {"replicas": replicas}},
                       content_type=MERGE_PATCH)


async def one_day(kube: Kube, ranks: int, homing: bool) -> dict:
    print(f"-- {'with' if homing else 'without'} homing", flush=True)
    await fresh_namespace(kube, NS, homing)
    try:
        await kube.request("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", body=inference())
        await kube.request("POST", f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs", body=training_job(ranks))
        first = await eventually(lambda: ranks_running(kube, ranks), TIMEOUT, what="the training ranks to run")
        homes = {r: p["spec"]["nodeName"] for r, p in sorted(first.items())}
        print(f"training runs: {homes}", flush=True)

        tide = time.monotonic()
        await scale(kube, 1)

        async def inference_running():
            serving = [p for p in await pods(kube, f"app={INFER}") if running(p)]
            return serving[0] if serving else None

        server = await eventually(inference_running, TIMEOUT, what="inference to preempt a rank and run")
        preempted_at = round(time.monotonic() - tide, 1)
        taken = server["spec"]["nodeName"]
        old = {p["metadata"]["uid"] for p in first.values()}

        async def gang_waiting():  # the restarted gang exists and none of it is bound
            new = [p for p in await pods(kube, f"volcano.sh/job-name={JOB}") if p["metadata"]["uid"] not in old]
            return new if len(new) == ranks and not any(p["spec"].get("nodeName") for p in new) else None

        waiting = await eventually(gang_waiting, TIMEOUT, what="the gang to restart and wait")
        print(f"inference preempted {taken} in {preempted_at} s; the gang restarted and waits", flush=True)
        decisions = {rank_of(p): decision_reason(p) for p in waiting}

        night = time.monotonic()
        await scale(kube, 0)
        back = await eventually(lambda: ranks_running(kube, ranks, old), TIMEOUT, what="the training ranks to run again")
        now = {r: p["spec"]["nodeName"] for r, p in sorted(back.items())}
        print(f"training runs again in {time.monotonic() - night:.1f} s: {now}", flush=True)
        restarts = (await kube.request("GET", f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs/{JOB}"))["status"].get("retryCount", 0)
        return {"homes": homes, "inference_node": taken, "preempted_in_s": preempted_at, "decisions": decisions, "after": now,
                "home": sum(now[r] == homes[r] for r in homes), "ranks": ranks, "gang_restarts": restarts,
                "back_in_s": round(time.monotonic() - night, 1)}
    finally:
        await delete_namespace(kube, NS)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", default=str(KUBECONFIG))
    ap.add_argument("--cluster", default="homing")
    ap.add_argument("--compare", action="store_true", help="also without homing")
    args = ap.parse_args()
    subprocess.run([str(E2E / ".kind" / "bin" / "kubectl"), f"--kubeconfig={args.kubeconfig}", "apply", "-f", str(PRIORITIES)],
                   check=True, capture_output=True)
    kube = await Kube.connect(args.kubeconfig)
    try:
        ranks = await free_ranks(kube, workers(args.cluster))  # every free NPU: the tide's replica must preempt a rank
        if ranks < 2:
            raise SystemExit(f"the workers' free NPUs hold {ranks} rank(s) of {POD_NPUS}: too few for the story")
        runs = {"homing": await one_day(kube, ranks, homing=True)}
        if args.compare:
            runs["without_homing"] = await one_day(kube, ranks, homing=False)
    finally:
        await kube.close()
    day = runs["homing"]
    problems = [
        *(f"rank {r} did not go home: {day['homes'][r]} then {day['after'][r]}"
          for r in day["homes"] if day["after"][r] != day["homes"][r]),
        *(f"homing's decision for rank {r} was {reason!r}, not its home" for r, reason in day["decisions"].items() if reason != "home"),
        *([f"inference ran on {day['inference_node']}, no training home: nothing was preempted"]
          if day["inference_node"] not in day["homes"].values() else []),
        *(["the Job did not restart as a gang"] if day["gang_restarts"] < 1 else []),
    ]
    return report("kind-tidal.json", runs, problems)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
