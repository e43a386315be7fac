"""Both Volcano tidal days, reduced, on the real Volcano scheduler: what homing controls
when a pod's home is not free (behaviour.md "Beyond the home"). The first day's morning wave is a burst larger
than the free room (displace few: one gang restarts, not several); the second day's
shared training image brings a new job to the nodes that hold it (image-warm) under the
reclaim tide's two queues. bench/tidal.py measures the whole days."""
from __future__ import annotations

import json

import pytest

from homing.kube.client import KubeError
from homing_e2e import objects as o
from homing_e2e.tidal import NS, TidalCluster

pytestmark = pytest.mark.cluster

IMAGES = {"train:30g": 30, "other:25g": 25, "serve:15g": 15}


def decisions(pods: list[dict]) -> list[dict]:
    return [json.loads((p["metadata"].get("annotations") or {}).get("homing.io/decision", "{}")) for p in pods]


async def test_a_burst_beyond_the_free_room_restarts_one_gang(binaries):
    """16 nodes: three 4-rank training gangs and 2 inference replicas leave 2 nodes free;
    inference goes to 8, so 4 replicas must evict. Every replica of the burst names the
    same victim, and Volcano's preempt, steered by it, restarts that one gang only."""
    c = await TidalCluster("volcano+homing", superpods=2, images=IMAGES, bandwidth_gbps=1).start()
    try:
        for j in range(3):
            await c.training_job(f"train-{j}", 4, "train:30g")
        await c.inference("qwen", 2, "serve:15g")
        await c.settle(quiet=4, at_least=6)
        assert len(c.nodes_of("train-")) == 12
        await c.scale("qwen", 8)
        await c.settle(quiet=4, at_least=6)
        assert len(c.nodes_of("qwen")) == 8
        got = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", "app=qwen")])
        victims = {d.get("displace") for d in decisions(got["items"]) if d.get("displace")}
        assert len(victims) == 1, f"the burst named {victims or 'no'} victims"
        restarted = {job: n for job, n in (await c.restarts_by_job()).items() if n}
        assert len(restarted) == 1, f"gangs restarted: {restarted}"
    finally:
        await c.stop()


async def test_a_new_job_of_a_shared_image_starts_where_the_image_is(binaries):
    """Reclaim tide (two queues). A 4-rank job runs and finishes; a new job of the same
    image (its first placement: no home) lands on the nodes that hold the image, among
    the 16 free ones."""
    c = await TidalCluster("volcano+homing", superpods=2, images=IMAGES, bandwidth_gbps=1, tide="reclaim").start()
    try:
        await c.training_job("first", 4, "train:30g")
        await c.settle(quiet=3, at_least=4)
        warm = set(c.nodes_of("first/"))
        assert len(warm) == 4

        async def reported():  # the kubelet's part: the nodes list the image in status.images
            nodes = [await c.kube.request("GET", f"/api/v1/nodes/{n}") for n in warm]
            return all(any("train:30g" in i["names"] for i in n["status"].get("images") or []) for n in nodes)

        await o.eventually(reported, what="the nodes report the training image")
        # The job, then its pods: the garbage collector may not know a kind whose CRD was
        # installed seconds ago, and waiting for it to collect the pods is waiting on its resync.
        jobs = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs"
        await c.kube.request("DELETE", f"{jobs}/first")
        await o.eventually(lambda: _deleted(c, f"{jobs}/first"), what="the first job deleted")
        await c.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", "volcano.sh/job-name=first")],
                             body={"gracePeriodSeconds": 0})
        await o.eventually(lambda: _gone(c, "first/"), what="the first job's pods gone")
        await c.training_job("second", 4, "train:30g")
        await c.settle(quiet=3, at_least=4)
        placed = set(c.nodes_of("second/"))
        assert placed == warm, f"placed on {sorted(placed)}, the image is on {sorted(warm)}"
        got = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", "volcano.sh/job-name=second")])
        assert all("image-warm" in d.get("prefer", []) for d in decisions(got["items"]))
    finally:
        await c.stop()


async def _deleted(c: TidalCluster, path: str) -> bool:
    try:
        await c.kube.request("GET", path)
    except KubeError as err:
        return err.status == 404
    return False


async def _gone(c: TidalCluster, prefix: str) -> bool:
    return not any(p.key.startswith(prefix) for p in c.recorder.pods.values())
