"""Stands in for the kubelet on nodes the harness made: a bound pod goes Running, a
terminating pod goes away. Nodes stay as the test sets them (no heartbeats)."""
from __future__ import annotations

import datetime

from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing_e2e.rounds import Rounds

FAKE_NODE_LABEL = "homing.io/e2e-fake-node"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(pod: dict) -> dict:
    started = _now()
    return {
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": started},
            ],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": started}},
                }
                for c in pod["spec"]["containers"]
            ],
        }
    }


class FakeKubelet(Rounds):
    def __init__(self, kube: Kube, period: float = 0.25) -> None:
        self.kube = kube
        self.period = period

    async def _fake_nodes(self) -> set[str]:
        nodes = await self.kube.list_all("/api/v1/nodes")
        return {n["metadata"]["name"] for n in nodes if FAKE_NODE_LABEL in (n["metadata"].get("labels") or {})}

    async def step(self) -> None:
        fake = await self._fake_nodes()
        for pod in await self.kube.list_all("/api/v1/pods"):
            meta, spec = pod["metadata"], pod.get("spec") or {}
            if spec.get("nodeName") not in fake:
                continue
            path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
            try:
                if meta.get("deletionTimestamp"):
                    await self.kube.request("DELETE", path, body={"gracePeriodSeconds": 0})
                elif (pod.get("status") or {}).get("phase") == "Pending":
                    await self.kube.request("PATCH", path + "/status", body=running_status(pod), content_type=MERGE_PATCH)
            except KubeError as err:
                if err.status not in (404, 409):
                    raise
