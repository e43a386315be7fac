"""behaviour.md "Image labels", on the real Volcano scheduler: a rank whose home lost its image
after its pod was admitted goes where the image is, judged when it binds. The kubelet's part
is the harness's image cache: it reports each node's images in status.images, and homing's
leader labels the nodes from those reports."""
from __future__ import annotations

import pytest

from homing.config import Settings
from homing.engine.cluster.images import image_label
from homing_e2e import objects as o
from homing_e2e.tidal import NS, TidalCluster

pytestmark = pytest.mark.cluster

IMAGE = "train:30g"
IMAGES = {IMAGE: 30, "serve:15g": 15}
KEY = image_label(IMAGE, Settings().labels.image_prefix)


async def test_a_rank_whose_home_lost_its_image_goes_where_the_image_is(binaries):
    c = await TidalCluster("volcano+homing", superpods=2, images=IMAGES, bandwidth_gbps=1).start()
    try:
        await c.training_job("solo", 1, IMAGE)
        await c.wait_bound("solo/", 1)
        (home,) = c.nodes_of("solo/")
        warm = next(n for n in c.node_names if n != home)

        async def labelled(node: str) -> bool:
            return KEY in (await c.kube.request("GET", f"/api/v1/nodes/{node}"))["metadata"].get("labels", {})

        await o.eventually(lambda: labelled(home), what="the home labelled with the image it started")
        # Another workload's image evicted the rank's from its home; another node holds it.
        cache = c.recorder.cache
        del cache.disk(home).images[IMAGE]
        cache.disk(warm).use(IMAGE, IMAGES[IMAGE])
        c.recorder.started.extend([(home, IMAGE), (warm, IMAGE)])  # the kubelets report again

        async def relabelled() -> bool:
            return await labelled(warm) and not await labelled(home)

        await o.eventually(relabelled, what="the labels following the images")
        before = len(c.recorder.replacements)
        await c.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", "volcano.sh/job-name=solo")],
                             body={"gracePeriodSeconds": 0})
        await o.eventually(lambda: _replaced(c, before), timeout=60, what="the rank placed again")
        (placed,) = [r for r in c.recorder.replacements[before:] if r.key.startswith("solo/")]
        assert placed.node == warm, f"placed on {placed.node}; its home {home} lost the image, {warm} holds it"
        assert c.recorder.replacement_pulls == 0, "the rank started without a pull"
    finally:
        await c.stop()


async def _replaced(c: TidalCluster, before: int) -> bool:
    return any(r.key.startswith("solo/") for r in c.recorder.replacements[before:])
