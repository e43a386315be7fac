"""`make dashboard-snapshot`: a short real workload on the local control plane (kube-apiserver,
controller-manager's StatefulSet and Deployment controllers, kube-scheduler, the homing
operator as a process), with the operator's /metrics scraped every few seconds; then
the dashboard of manifests/monitoring drawn from those samples (bench/dashboard_render.py)
into docs/images/dashboard.png. The samples are kept in bench/results/dashboard.json.

    .venv/bin/python bench/dashboard_snapshot.py [--render-only] [--scrape-every 3]

The workload, on 12 fake 8-NPU nodes (one pod a node): a training StatefulSet (4 ranks)
in namespace `training`, an inference StatefulSet (2) and Deployment (2) in `inference`;
rounds of training restarts, an inference burst while training restarts (homes taken),
a cordoned home, a node fault, and the Deployment scaled to zero and back.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "e2e"))

from homing.kube.client import MERGE_PATCH, Kube  # noqa: E402
from homing_e2e import objects as o  # noqa: E402
from homing_e2e.cluster import LocalControlPlane, build_binaries  # noqa: E402
from homing_e2e.fake_kubelet import FakeKubelet  # noqa: E402
from homing_e2e.monitoring import parse_metrics  # noqa: E402
from homing_e2e.operator_process import OperatorProcess  # noqa: E402
from homing_e2e.scheduler import PROFILE, KubeScheduler  # noqa: E402
from homing_e2e.webhook_ready import webhook_answers  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "dashboard.json"
PICTURE = ROOT / "docs" / "images" / "dashboard.png"
POOL = "snapshot.homing.io/pool"
NODES = 12


def template(app: str) -> dict:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"schedulerName": PROFILE, "nodeSelector": {POOL: "snap"}, "containers": [o.container(npus=8)],
                 "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0},
    }


async def create(kube: Kube, ns: str, kind: str, name: str, replicas: int) -> None:
    spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template(name)}
    if kind == "statefulsets":
        spec.update(podManagementPolicy="Parallel", serviceName=name)
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet" if kind == "statefulsets" else "Deployment",
            "metadata": {"name": name}, "spec": spec}
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/{kind}", body=body)


async def scale(kube: Kube, ns: str, kind: str, name: str, replicas: int) -> None:
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/{kind}/{name}", body={"spec": {"replicas": replicas}},
                       content_type=MERGE_PATCH)


async def pods(kube: Kube, ns: str, app: str) -> list[dict]:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
    return [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]


async def settled(kube: Kube, ns: str, app: str, count: int) -> dict[str, str]:
    """Waits for `count` live pods of the app, all bound and Running: name -> node."""
    async def check():
        live = await pods(kube, ns, app)
        if len(live) == count and all((p.get("status") or {}).get("phase") == "Running" for p in live):
            return ({p["metadata"]["name"]: p["spec"]["nodeName"] for p in live},)
        return None

    (placed,) = await o.eventually(check, timeout=120, what=f"{count} {app} pods running")
    return placed


async def delete(kube: Kube, ns: str, names) -> None:
    for name in names:
        await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body={"gracePeriodSeconds": 0})


async def cordon(kube: Kube, node: str, on: bool) -> None:
    await kube.request("PATCH", f"/api/v1/nodes/{node}", body={"spec": {"unschedulable": on}}, content_type=MERGE_PATCH)


async def workload(kube: Kube, note, pause: float) -> None:
    for i in range(NODES):
        await o.node(kube, f"snap-{i:02d}", labels={POOL: "snap"})
    for ns in ("training", "inference"):
        await o.namespace(kube, ns)
    await webhook_answers(kube, "training")
    await create(kube, "training", "statefulsets", "llama", 4)
    await create(kube, "inference", "statefulsets", "chat", 2)
    await create(kube, "inference", "deployments", "embed", 2)
    train = await settled(kube, "training", "llama", 4)
    await settled(kube, "inference", "chat", 2)
    await settled(kube, "inference", "embed", 2)
    note("first placement")
    await asyncio.sleep(pause)

    async def restart_training(why: str) -> dict[str, str]:
        await delete(kube, "training", list(train))
        placed = await settled(kube, "training", "llama", 4)
        note(why)
        await asyncio.sleep(pause)
        return placed

    for _ in range(2):
        train = await restart_training("training restarts")
    # Inference bursts while training restarts: the burst takes nodes, some of them homes
    # (4 + 6 + 2 pods: every node taken, so nothing waits for the scale-in).
    await scale(kube, "inference", "statefulsets", "chat", 6)
    await delete(kube, "training", list(train))
    await settled(kube, "inference", "chat", 6)
    await asyncio.sleep(pause / 2)
    await scale(kube, "inference", "statefulsets", "chat", 2)
    train = await settled(kube, "training", "llama", 4)
    await settled(kube, "inference", "chat", 2)
    note("inference burst during a training restart")
    await asyncio.sleep(pause)
    train = await restart_training("training restarts")
    # A home cordoned for maintenance, then a home that faults.
    cordoned = train["llama-0"]
    await cordon(kube, cordoned, True)
    train = await restart_training(f"training restarts, {cordoned} cordoned")
    await cordon(kube, cordoned, False)
    faulty = train["llama-1"]
    await o.set_node_ready(kube, faulty, False)
    await asyncio.sleep(2)
    train = await restart_training(f"training restarts, {faulty} not ready")
    await o.set_node_ready(kube, faulty, True)
    # The inference Deployment scaled to zero and back: its replicas return to warm nodes.
    await scale(kube, "inference", "deployments", "embed", 0)
    await settled(kube, "inference", "embed", 0)
    await scale(kube, "inference", "deployments", "embed", 2)
    await settled(kube, "inference", "embed", 2)
    note("inference Deployment 2 -> 0 -> 2")
    await asyncio.sleep(pause)
    for _ in range(2):
        train = await restart_training("training restarts")


async def scrape(operator: OperatorProcess, every: float, scrapes: list[dict]) -> None:
    while True:
        text = await asyncio.to_thread(operator.metrics)
        _, samples = parse_metrics(text)
        mine = [[s.name, s.labels, s.value] for s in samples if s.name.startswith("homing_") and not s.name.endswith("_created")]
        if mine:
            scrapes.append({"t": time.time(), "samples": mine})
        await asyncio.sleep(every)


async def record(every: float, pause: float) -> dict:
    build_binaries()
    cp = LocalControlPlane().start()
    workdir = Path(tempfile.mkdtemp(prefix="homing-snap-"))
    operator = OperatorProcess(cp.kubeconfig, workdir)
    scheduler = KubeScheduler(cp.kubeconfig, workdir)
    kube = await Kube.connect(str(cp.kubeconfig))
    kubelet = FakeKubelet(kube)
    scrapes: list[dict] = []
    rounds: list[dict] = []
    try:
        await o.install_crd(kube)
        kubelet.start()
        operator.start()
        scheduler.start()
        scraper = asyncio.create_task(scrape(operator, every, scrapes))

        def note(what: str) -> None:
            rounds.append({"t": time.time(), "what": what})
            print(f"{time.strftime('%H:%M:%S')} {what}", flush=True)

        await workload(kube, note, pause)
        await asyncio.sleep(2 * every)
        scraper.cancel()
    finally:
        await kubelet.stop()
        await kube.close()
        scheduler.stop()
        operator.stop()
        cp.stop()
    return {"scrape_every": every, "rounds": rounds, "scrapes": scrapes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--render-only", action="store_true", help=f"draw from {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--scrape-every", type=float, default=3.0)
    parser.add_argument("--pause", type=float, default=15.0, help="seconds between rounds")
    args = parser.parse_args()
    if not args.render_only:
        data = asyncio.run(record(args.scrape_every, args.pause))
        RESULTS.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    from dashboard_render import render  # matplotlib: the `dashboard` extra

    render(json.loads(RESULTS.read_text()), PICTURE)
    print(f"wrote {PICTURE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
