"""A reduced tidal day on the real Volcano scheduler (issue 4, CI part): inference
scales out and preempts a gang-scheduled training job; when inference scales in, the
restarted job's ranks are placed by Volcano — and this checks where they landed."""
from __future__ import annotations

import pytest

from homing_e2e import objects as o
from homing_e2e.cluster import build_binaries
from homing_e2e.tidal import TidalCluster

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def binaries():
    build_binaries()


def ranks(c: TidalCluster) -> dict[str, str]:
    """Where the recorder last saw each training rank bound."""
    return {k: v for k, v in c.recorder.last_node.items() if k.startswith("llama/")}


async def training_and_inference(c: TidalCluster) -> dict[str, str]:
    """Dawn: an 8-rank training job (2 blocks of 4 nodes) and 4 inference replicas on 16 nodes."""
    await c.training_job("llama", 8, "train:30g", sp_block=32)
    await c.inference("qwen", 4, "serve:15g")
    await c.settle()
    return ranks(c)


async def test_training_returns_home_after_inference_leaves(binaries):
    c = await TidalCluster("volcano+homing", superpods=2, images={"train:30g": 30, "serve:15g": 15}, bandwidth_gbps=1).start()
    try:
        first = await training_and_inference(c)
        assert len(first) == 8

        async def reported():  # the kubelet's part, from the image-cache model
            node = await c.kube.request("GET", f"/api/v1/nodes/{first['llama/worker/0']}")
            return any("train:30g" in i["names"] for i in node.get("status", {}).get("images") or [])

        await o.eventually(reported, what="the node reports the training image in status.images")
        await c.scale("qwen", 12)  # 12 + 8 > 16 nodes: the job is preempted as a gang
        await c.settle()
        assert not c.nodes_of("llama/"), "inference did not preempt the training job"
        await c.scale("qwen", 4)
        await c.settle(quiet=5)
        landed = ranks(c)
        summary = c.recorder.summary()
        training = [r for r in c.recorder.replacements if r.key.startswith("llama/")]
        assert len(training) == 8 and all(r.feasible for r in training)
        assert landed == first, f"ranks moved: {[(k, first[k], landed[k]) for k in first if first[k] != landed[k]]}"
        assert summary["feasible_home_rate"] == 1.0
    finally:
        await c.stop()


async def test_operator_killed_mid_day_homes_still_honoured(binaries):
    """The operator dies while inference preempts training: pods keep being created and
    scheduled (failurePolicy Ignore); after its restart the job still goes home."""
    c = await TidalCluster("volcano+homing", superpods=2, images={"train:30g": 30, "serve:15g": 15}, bandwidth_gbps=1).start()
    try:
        first = await training_and_inference(c)

        async def written():
            mems = await c.kube.request("GET", "/apis/homing.io/v1alpha1/namespaces/ai/placementmemories")
            return any(((m.get("status") or {}).get("summary") or {}).get("ranks") == 8 for m in mems["items"])

        await o.eventually(written, what="the job's memory written")
        c.operator.stop(kill=True)
        await c.scale("qwen", 12)  # created and scheduled with nobody answering the webhook
        await c.settle()
        assert len(c.nodes_of("qwen")) == 12 and not c.nodes_of("llama/")
        c.operator.start()
        await c.scale("qwen", 4)
        await c.settle(quiet=5)
        landed = ranks(c)
        assert landed == first
    finally:
        await c.stop()
