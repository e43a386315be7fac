"""The leader's loop that keeps each node's image labels (behaviour.md "Image labels") equal to
the large images its kubelet reports, so that the home and image-warm terms
(engine/placement/rules/image_warm.py) are judged by the scheduler at bind time. Level-triggered:
every node event recomputes that node's difference; the loop writes at most
`max_patches_per_second` of them. Each replica keeps the differences (one per node at most), so a
new leader writes what is due at once. Without the right to patch nodes the labels stay absent
and the terms fall back to host names (engine: an image no node is labelled for adds no condition)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from homing.config import Settings
from homing.engine.cluster.images import wanted_image_labels
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.kube.signals import logs, metrics

log = logs.get("homing.image_labels")

INTERVAL_SECONDS = 1.0
MAX_PATCHES_PER_SECOND = 50  # a cluster-wide image roll-out relabels every node: spread over minutes, not a burst
FORBIDDEN_REPEAT_SECONDS = 600  # how often "no right to label nodes" is said again


def label_patch(node: dict[str, Any], settings: Settings) -> dict[str, str | None]:
    """The merge patch of the node's labels that makes its image labels what its kubelet reports
    (none when the preference is off: switching it off clears them)."""
    prefix = settings.labels.image_prefix
    on = settings.preferences.image_labels and settings.preferences.image_warm
    want = wanted_image_labels(node, prefix, settings.bounds.image_label_min_bytes) if on else {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    have = {k: v for k, v in labels.items() if k.startswith(prefix + "/")}
    patch: dict[str, str | None] = {k: v for k, v in want.items() if have.get(k) != v}
    patch.update({k: None for k in have if k not in want})
    return patch


class ImageLabels:
    def __init__(self, kube: Kube, settings: Settings, leading: Callable[[], bool]) -> None:
        self.kube, self.settings, self.leading = kube, settings, leading
        self.pending: dict[str, dict[str, str | None]] = {}  # node -> the patch still due (bounded by the nodes)
        self.forbidden_said = 0.0

    def observe(self, event: str | None, node: dict[str, Any]) -> None:
        """One Node watch event (never raises: ClusterState guards its listeners)."""
        name = (node.get("metadata") or {}).get("name")
        if not name:
            return
        patch = {} if event == "DELETED" else label_patch(node, self.settings)
        if patch:
            self.pending[name] = patch
        else:
            self.pending.pop(name, None)

    async def once(self) -> int:
        """One pass; returns the patches written."""
        if self.settings.mode == "observe" or not self.leading() or not self.pending:
            return 0
        written = 0
        for name in list(self.pending)[:max(1, int(MAX_PATCHES_PER_SECOND * INTERVAL_SECONDS))]:
            patch = self.pending.pop(name)
            try:
                await self.kube.request("PATCH", f"/api/v1/nodes/{name}", body={"metadata": {"labels": patch}},
                                        content_type=MERGE_PATCH, timeout=5)
            except (KubeError, OSError, TimeoutError) as err:
                status = getattr(err, "status", None)
                metrics.IMAGE_LABEL_PATCHES.labels("failed").inc()
                if status == 403:  # not granted: the terms keep naming hosts; said now and then, not per node
                    if time.monotonic() - self.forbidden_said > FORBIDDEN_REPEAT_SECONDS:
                        self.forbidden_said = time.monotonic()
                        log.warning("no right to label nodes with their images: image terms name hosts as at admission",
                                    node=name)
                elif status != 404:  # gone: nothing to label; else tried again unless an event said newer
                    self.pending.setdefault(name, patch)
                    log.warning("image labels not written", node=name, error=str(err)[:200])
                continue
            written += 1
            metrics.IMAGE_LABEL_PATCHES.labels("written").inc()
        if written:
            log.info("image labels written", nodes=written, due=len(self.pending))
        return written

    async def forever(self) -> None:
        while True:
            await asyncio.sleep(INTERVAL_SECONDS)
            try:
                await self.once()
            except Exception:  # a pass that fails is tried again at the next interval
                log.exception("image-label pass failed")
