"""behaviour.md "Image labels": the leader labels each node with the large images its kubelet
reports, and takes a label off when the image is gone, against the real API server."""
from __future__ import annotations

import pytest

from homing.config import Settings
from homing.engine.cluster.images import image_label
from homing.kube.client import MERGE_PATCH, Kube
from homing_e2e import objects as o
from homing_e2e.operator_process import OperatorProcess

pytestmark = pytest.mark.cluster

PREFIX = Settings().labels.image_prefix
BIG, SMALL = "registry.example.com/ai/train:24.1", "registry.example.com/tools/sidecar:1"


async def report(kube: Kube, node: str, images: list[tuple[str, int]]) -> None:
    """The kubelet's part: status.images, largest first."""
    body = {"status": {"images": [{"names": [n], "sizeBytes": size} for n, size in images]}}
    await kube.request("PATCH", f"/api/v1/nodes/{node}/status", body=body, content_type=MERGE_PATCH)


async def image_labels(kube: Kube, node: str) -> dict[str, str]:
    got = await kube.request("GET", f"/api/v1/nodes/{node}")
    return {k: v for k, v in got["metadata"]["labels"].items() if k.startswith(PREFIX + "/")}


async def test_the_leader_labels_a_node_with_its_large_images_and_unlabels_them(kube: Kube, operator: OperatorProcess):
    node = await o.node(kube, f"img-{o.short_id()}")
    await report(kube, node, [(BIG, 30_000_000_000), (SMALL, 40_000_000)])

    async def labelled():
        return await image_labels(kube, node) == {image_label(BIG, PREFIX): "registry.example.com_ai_train_24.1"}

    await o.eventually(labelled, timeout=30, what="the large image's label (and none for the small one)")
    await report(kube, node, [(SMALL, 40_000_000)])  # the large image was evicted

    async def unlabelled():
        return await image_labels(kube, node) == {}

    await o.eventually(unlabelled, timeout=30, what="the label gone with the image")
    await kube.request("DELETE", f"/api/v1/nodes/{node}")
