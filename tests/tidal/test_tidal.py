"""A reduced tidal day on the real Volcano scheduler: inference
scales out and preempts (or, in the reclaim variant, reclaims) a gang-scheduled training
job; when inference scales in, the restarted job's ranks are placed by Volcano — and
this checks where they landed. Volcano runs the shipped manifests/tidal configuration."""
from __future__ import annotations

import asyncio

import pytest

from homing_e2e import objects as o
from homing_e2e.home_checks import assert_free_homes_taken
from homing_e2e.tidal import TidalCluster

pytestmark = pytest.mark.cluster


async def training_and_inference(c: TidalCluster) -> dict[str, str]:
    """Dawn: an 8-rank training job (2 blocks of 4 nodes) and 4 inference replicas on 16 nodes."""
    await c.training_job("llama", 8, "train:30g", sp_block=32)
    await c.inference("qwen", 4, "serve:15g")
    await c.settle()
    return c.last_nodes("llama/")


@pytest.mark.parametrize("marks", ["marks", "no-marks"])
@pytest.mark.parametrize("tide", ["preempt", "reclaim"])
async def test_training_returns_home_after_inference_leaves(binaries, tide, marks):
    env = {} if marks == "marks" else {"HOMING_DELETION_COST__ENABLED": "false"}
    c = await TidalCluster("volcano+homing", superpods=2, images={"train:30g": 30, "serve:15g": 15}, bandwidth_gbps=1, tide=tide,
                           operator_env=env).start()
    try:
        first = await training_and_inference(c)
        assert len(first) == 8

        async def reported():  # the kubelet's part, from the image-cache model
            node = await c.kube.request("GET", f"/api/v1/nodes/{first['llama/worker/0']}")
            return any("train:30g" in i["names"] for i in node.get("status", {}).get("images") or [])

        await o.eventually(reported, what="the node reports the training image in status.images")
        await c.scale("qwen", 12)  # 12 + 8 > 16 nodes: the job is preempted (reclaimed) as a gang
        await c.settle()
        assert not c.nodes_of("llama/"), f"inference did not take the training job's nodes ({tide})"
        assert await c.gang_restarts() >= 1, "the evicted gang restarted whole and Volcano counted it"
        assert len(c.nodes_of("qwen")) == 12
        await c.scale("qwen", 4)

        def replaced() -> list:
            return [r for r in c.recorder.replacements if r.key.startswith("llama/")]

        # The gang binds once Volcano's next sessions see the room: wait for that, not a
        # fixed quiet time after the last deletion (a loaded machine once took longer).
        await c.settle(quiet=5, until=lambda: len(replaced()) >= 8)
        training = replaced()
        assert len(training) == 8 and set(c.last_nodes("llama/")) == set(first), await c.pending_state("llama/")
        await assert_free_homes_taken(c, training, first, "llama/")
    finally:
        await c.stop()


async def test_fake_nodes_heartbeat_by_lease(binaries):
    """kwok renews each node's lease: nodes stay Ready between faults. (Its status
    heartbeat, every 20-45 s, once lapsed the node grace and made nodes flap NotReady,
    and homing recorded faults on them.)"""
    c = await TidalCluster("volcano", superpods=1, images={}, bandwidth_gbps=1).start()
    try:
        async def renewals() -> dict[str, str]:
            got = await c.kube.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
            return {lease["metadata"]["name"]: lease["spec"].get("renewTime") for lease in got["items"]}

        async def every_node_leased():
            return set(await renewals()) == set(c.node_names)

        await o.eventually(every_node_leased, timeout=20, what="a lease per node")
        first = await renewals()
        await asyncio.sleep(12)  # one renewal interval (lease 40 s / 4) and a margin
        second = await renewals()
        assert all(second[n] != first[n] for n in c.node_names), (first, second)
        assert [t for t in c.recorder.transitions if not t[3]] == []  # no node dropped meanwhile
    finally:
        await c.stop()


async def test_operator_killed_mid_day_homes_still_honoured(binaries):
    """The operator dies while inference preempts training: pods keep being created and
    scheduled (failurePolicy Ignore). Pods created while it was down carry no preference;
    pods created after its restart get their homes from the reloaded memory."""
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
        # The job's pods were recreated during the outage, with no preference: a dry run
        # of the same pod now shows the restarted operator's answer, from reloaded memory.
        got = await c.kube.request("GET", "/api/v1/namespaces/ai/pods", query=[("labelSelector", "volcano.sh/job-name=llama")])
        outage = [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]
        assert outage and all("homing.io/decision" not in (p["metadata"].get("annotations") or {}) for p in outage)
        for p in outage:
            meta = p["metadata"]
            probe = {"metadata": {"name": meta["name"] + "-probe", "labels": meta.get("labels") or {},
                                  "annotations": meta.get("annotations") or {}, "ownerReferences": meta["ownerReferences"]},
                     "spec": {"schedulerName": "volcano", "automountServiceAccountToken": False,
                              "containers": [{k: v for k, v in ctr.items() if k != "volumeMounts"} for ctr in p["spec"]["containers"]]}}
            answer = await c.kube.request("POST", "/api/v1/namespaces/ai/pods", body=probe, query=[("dryRun", "All")])
            key = f"llama/worker/{meta['annotations']['volcano.sh/task-index']}"
            annotations = answer["metadata"].get("annotations") or {}
            assert annotations.get("homing.io/home") == first[key], annotations.get("homing.io/decision")
    finally:
        await c.stop()
