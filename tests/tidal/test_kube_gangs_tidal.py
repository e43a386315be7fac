"""A reduced tidal day on kube-scheduler 1.37's own gangs: an 8-rank training job (an
Indexed Job whose pods join a PodGroup) is preempted by a higher-priority inference
Deployment as it scales out; when inference scales in, kube-scheduler places the
re-created ranks, each by its ordinary scores — and this checks where they landed.
Run with the PodGroup evicted whole (disruption mode all) and pod by pod (single)."""
from __future__ import annotations

import pytest

from homing_e2e import objects as o
from homing_e2e.home_checks import assert_free_homes_taken
from homing_e2e.tidal import TidalCluster

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("disruption", ["all", "single"])
async def test_gang_returns_home_on_kube_scheduler(binaries, disruption):
    c = await TidalCluster("kube-scheduler+homing", superpods=2, images={"train:30g": 30, "serve:15g": 15},
                           bandwidth_gbps=1, tide=disruption).start()
    try:
        await c.training_job("llama", 8, "train:30g")
        await c.inference("qwen", 4, "serve:15g")
        await c.settle(until=lambda: len(c.last_nodes("llama/")) == 8)
        first = c.last_nodes("llama/")
        assert len(first) == 8 and len(set(first.values())) == 8, await c.pending_state("llama/")

        async def reported():  # the kubelet's part, from the image-cache model
            node = await c.kube.request("GET", f"/api/v1/nodes/{first['llama/0']}")
            return any("train:30g" in i["names"] for i in node.get("status", {}).get("images") or [])

        await o.eventually(reported, what="the node reports the training image in status.images")
        c.recorder.phase = "morning"
        await c.scale("qwen", 12)  # 12 + 8 > 16 nodes: kube-scheduler preempts training ranks
        await c.settle()
        assert len(c.nodes_of("qwen")) == 12, await c.pending_state("qwen")
        lost = [k for k, n in first.items() if n in set(c.nodes_of("qwen"))]
        assert lost, "inference took no training node"
        if disruption == "all":  # the PodGroup went as one victim: no rank of it runs
            assert not c.nodes_of("llama/"), "a rank of the gang kept running after the gang was preempted"
        assert await c.gang_restarts() >= 1

        c.recorder.phase = "night"
        await c.scale("qwen", 4)

        def replaced() -> list:
            return [r for r in c.recorder.replacements if r.key.startswith("llama/")]

        evicted = len(lost) if disruption == "single" else 8  # rank by rank only the ranks inference displaced
        await c.settle(quiet=5, until=lambda: len(replaced()) >= evicted)
        training = replaced()
        assert len(training) >= len(lost), await c.pending_state("llama/")
        assert set(c.last_nodes("llama/")) == set(first)
        await assert_free_homes_taken(c, training, first, "llama/")
    finally:
        await c.stop()
