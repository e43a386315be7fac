"""homing does not depend on Volcano: with kube-scheduler (the default profile with the
NodeAffinity score weight of manifests/kube-scheduler), a Deployment scaled in and out
again and a deleted StatefulSet pod land back on their nodes."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from homing.kube.client import MERGE_PATCH
from homing.placementmemory import merge, read_object
from homing_e2e import objects as o
from homing_e2e.scheduler import PROFILE, KubeScheduler

pytestmark = pytest.mark.cluster
POOL = "e2e.homing.io/pool"


@pytest.fixture(scope="module")
def kube_scheduler(kubeconfig):
    sched = KubeScheduler(kubeconfig, Path(tempfile.mkdtemp(prefix="homing-ks-"))).start()
    yield sched
    sched.stop()


def template(ns: str, app: str) -> dict:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "schedulerName": PROFILE,
            "nodeSelector": {POOL: ns},  # only this test's nodes
            "containers": [o.container(npus=8)],
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0,
        },
    }


async def _bound(kube, ns: str, app: str, count: int) -> dict[str, str]:
    async def all_bound():
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
        pods = [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]
        if len(pods) == count and all(p["spec"].get("nodeName") for p in pods):
            return ({p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods},)
        return None

    (placement,) = await o.eventually(all_bound, timeout=60, what=f"{count} {app} pods bound")
    return placement


async def _scale(kube, ns: str, kind: str, name: str, replicas: int) -> None:
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/{kind}/{name}", body={"spec": {"replicas": replicas}},
                       content_type=MERGE_PATCH)


async def test_deployment_scaled_in_and_out_returns_to_warm_nodes(kube, operator, kube_scheduler, ns):
    for i in range(10):  # each replica takes a whole node; by chance alone the same 3 of 10: 1 in 120
        await o.node(kube, f"n{i}-{ns}", labels={POOL: ns})
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "infer"}}, "template": template(ns, "infer")}}
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=body)
    first = set((await _bound(kube, ns, "infer", 3)).values())

    async def warm():
        mems = await o.written_memories(kube, ns)
        return mems and sum(p.warm for p in merge([read_object(m) for m in mems]).pool.values()) == 3

    await o.eventually(warm, what="three warm homes remembered")
    await _scale(kube, ns, "deployments", "infer", 0)
    await _bound(kube, ns, "infer", 0)
    await _scale(kube, ns, "deployments", "infer", 3)
    again = set((await _bound(kube, ns, "infer", 3)).values())
    assert again == first, f"kube-scheduler placed the replicas on {sorted(again)}, they ran on {sorted(first)}"


async def test_statefulset_pod_returns_to_its_node(kube, operator, kube_scheduler, ns):
    for i in range(12):  # by chance alone db-1 would come back with odds 1 in 12
        await o.node(kube, f"n{i}-{ns}", labels={POOL: ns})
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"replicas": 3, "podManagementPolicy": "Parallel", "serviceName": "db",
                     "selector": {"matchLabels": {"app": "db"}}, "template": template(ns, "db")}}
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/statefulsets", body=body)
    first = await _bound(kube, ns, "db", 3)
    for name in first:
        await o.running(kube, ns, name)
    old_uid = (await o.get_pod(kube, ns, "db-1"))["metadata"]["uid"]
    # Not o.delete_pod: the controller may recreate db-1 before a GET ever sees it gone.
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/db-1", body={"gracePeriodSeconds": 0})

    async def back():
        p = await o.get_pod(kube, ns, "db-1")
        return p if p["metadata"]["uid"] != old_uid and p["spec"].get("nodeName") else None

    again = await o.eventually(back, timeout=60, what="db-1 recreated and scheduled")
    assert again["spec"]["nodeName"] == first["db-1"]
    assert o.home(again) == first["db-1"]
