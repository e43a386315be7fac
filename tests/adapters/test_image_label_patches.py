"""kube/leader/image_labels.py: the patch that makes a node's image labels what its kubelet
reports, and the one pending patch kept per node (behaviour.md "Image labels")."""
from __future__ import annotations

import pytest

from homing.config import Settings
from homing.engine.cluster.images import image_label
from homing.kube.leader.image_labels import ImageLabels, label_patch

PREFIX = Settings().labels.image_prefix
BIG, OTHER = "train:24.1", "serve:3"
GB = 1_000_000_000


def node(images: list[tuple[str, int]], labels: dict[str, str] | None = None, name: str = "n1") -> dict:
    return {"metadata": {"name": name, "labels": {"team": "a", **(labels or {})}},
            "status": {"images": [{"names": [n], "sizeBytes": s} for n, s in images]}}


KEY, OTHER_KEY = image_label(BIG, PREFIX), image_label(OTHER, PREFIX)


@pytest.mark.parametrize("images, labels, settings, patch", [
    ([(BIG, 30 * GB)], {}, {}, {KEY: "train_24.1"}),  # a new image: its label
    ([(BIG, 30 * GB)], {KEY: "train_24.1"}, {}, {}),  # up to date: nothing to write
    ([], {KEY: "train_24.1"}, {}, {KEY: None}),  # the image went: its label goes
    ([(BIG, 30 * GB), (OTHER, 4 * GB)], {KEY: "old"}, {}, {KEY: "train_24.1", OTHER_KEY: "serve_3"}),
    ([(BIG, 30 * GB)], {KEY: "train_24.1"}, {"preferences": {"image_labels": False}}, {KEY: None}),  # off: taken off
    ([(BIG, 30 * GB)], {KEY: "train_24.1"}, {"preferences": {"image_warm": False}}, {KEY: None}),
    ([(BIG, 30 * GB)], {}, {"bounds": {"image_label_min_bytes": 40 * GB}}, {}),  # under the floor
])
def test_label_patch(images, labels, settings, patch):
    assert label_patch(node(images, labels), Settings(**settings)) == patch


def test_one_pending_patch_per_node_and_none_once_up_to_date_or_gone():
    labeller = ImageLabels(kube=None, settings=Settings(), leading=lambda: True)  # type: ignore[arg-type]
    labeller.observe("ADDED", node([(BIG, 30 * GB)]))
    labeller.observe("MODIFIED", node([(BIG, 30 * GB), (OTHER, 4 * GB)]))
    assert labeller.pending == {"n1": {KEY: "train_24.1", OTHER_KEY: "serve_3"}}
    labeller.observe("MODIFIED", node([(BIG, 30 * GB)], {KEY: "train_24.1"}))  # the leader's own write came back
    assert labeller.pending == {}
    labeller.observe("ADDED", node([(BIG, 30 * GB)], name="n2"))
    labeller.observe("DELETED", node([(BIG, 30 * GB)], name="n2"))
    assert labeller.pending == {}
