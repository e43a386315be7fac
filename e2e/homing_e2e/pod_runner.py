"""A kubelet stand-in for homing's own pods: the real Deployment and ReplicaSet controllers
(kube-controller-manager) decide which pods exist; this runs each as an operator process
and reports it Ready once its /readyz answers, and stops it the way a kubelet stops a
pod (endpoint removed, the preStop hook, SIGTERM) when the pod is deleted. So a Deployment
rollout (an image tag change) is carried out in the controllers' own order."""
from __future__ import annotations

import asyncio
import datetime

from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing_e2e import objects as o
from homing_e2e.operator_process import OperatorProcess
from homing_e2e.replicaset import OperatorReplicas
from homing_e2e.rounds import Rounds

STRATEGIC = "application/strategic-merge-patch+json"


def _ready_status() -> dict:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [{"type": t, "status": "True", "lastTransitionTime": now}
                  for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
    return {"status": {"phase": "Running", "conditions": conditions, "startTime": now}}


class PodRunner(Rounds):
    period = 0.2
    retried = (KubeError,)

    def __init__(self, kube: Kube, replicas: OperatorReplicas, namespace: str, selector: str, node: str) -> None:
        self.kube, self.replicas, self.namespace, self.selector, self.node = kube, replicas, namespace, selector, node
        self.running: dict[str, OperatorProcess] = {}  # pod name -> its process
        self.busy: set[str] = set()
        self.started: list[str] = []

    async def step(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        got = await self.kube.request("GET", path, query=[("labelSelector", self.selector)])
        for pod in got["items"]:
            name = pod["metadata"]["name"]
            if name in self.busy:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                self._spawn(name, self._stop(name))
            elif name not in self.running:
                self._spawn(name, self._start(pod))

    def _spawn(self, name: str, work) -> None:
        self.busy.add(name)
        task = asyncio.get_running_loop().create_task(work)
        task.add_done_callback(lambda _: self.busy.discard(name))

    async def _start(self, pod: dict) -> None:
        name = pod["metadata"]["name"]
        if not pod["spec"].get("nodeName"):
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": self.node}}
            await self.kube.request("POST", f"/api/v1/namespaces/{self.namespace}/pods/{name}/binding", body=body)
        self.running[name] = await asyncio.to_thread(self.replicas.add)  # returns once /readyz answers
        self.started.append(name)
        await self.kube.request(
            "PATCH", f"/api/v1/namespaces/{self.namespace}/pods/{name}/status", body=_ready_status(), content_type=MERGE_PATCH
        )

    async def _stop(self, name: str) -> None:
        proc = self.running.pop(name, None)
        if proc is not None:
            await asyncio.to_thread(self.replicas.remove, proc)
        try:
            await self.kube.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{name}", body={"gracePeriodSeconds": 0})
        except KubeError as err:
            if err.status != 404:
                raise


LABELS = {"app.kubernetes.io/name": "homing-e2e", "app.kubernetes.io/component": "operator"}
SELECTOR = ",".join(f"{k}={v}" for k, v in LABELS.items())


def deployment(image: str) -> dict:
    """homing's Deployment as manifests/base/deployment.yaml rolls it out: two replicas,
    RollingUpdate with maxSurge 1 and maxUnavailable 0. The container is never run as such:
    PodRunner runs the operator process for each pod."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "homing", "labels": LABELS},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": o.bound_by_the_test({
                    "containers": [{"name": "homing", "image": image}],
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 30,
                }),
            },
        },
    }


async def control_node(kube: Kube, name: str) -> str:
    """A node for homing's own pods, not one of the fake kubelet's (that would report them
    Ready before their process is)."""
    await kube.request("POST", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    return name


async def rolled_out(kube: Kube, namespace: str, image: str) -> bool:
    dep = await kube.request("GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/homing")
    st = dep.get("status") or {}
    pods = await kube.request("GET", f"/api/v1/namespaces/{namespace}/pods", query=[("labelSelector", SELECTOR)])
    current = dep["spec"]["template"]["spec"]["containers"][0]["image"] == image
    return (
        current
        and st.get("observedGeneration", 0) >= dep["metadata"]["generation"]
        and st.get("updatedReplicas") == st.get("availableReplicas") == st.get("replicas") == 2
        and len(pods["items"]) == 2
    )


async def roll_image(kube: Kube, namespace: str, image: str, runner: PodRunner) -> float | None:
    """Change the Deployment's image tag and wait until the controllers have replaced both pods."""
    body = {"spec": {"template": {"spec": {"containers": [{"name": "homing", "image": image}]}}}}
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/homing", body=body, content_type=STRATEGIC)
    deadline = asyncio.get_running_loop().time() + 240
    while not await rolled_out(kube, namespace, image) or len(runner.running) != 2 or runner.busy:
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the Deployment did not roll out")
        await asyncio.sleep(0.5)
    return None
