"""The weights check models the shipped scheduler configurations: the profiles in
engine/placement/scheduler_scores.py must say what the shipped files say."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from homing.engine.placement.scheduler_scores import KUBE_SCHEDULER, VOLCANO

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"
VOLCANO_DEFAULTS = {"imagelocality.weight": 1, "leastrequested.weight": 1, "balancedresource.weight": 1}  # nodeorder.go


@pytest.mark.parametrize("tide", ["preempt", "reclaim", "gangpreempt", "gangreclaim"])
def test_volcano_profile_is_the_shipped_nodeorder(tide):
    conf = yaml.safe_load((MANIFESTS / "tidal" / tide / "volcano-scheduler.conf").read_text())
    (nodeorder,) = [p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "nodeorder"]
    args = {**VOLCANO_DEFAULTS, **(nodeorder.get("arguments") or {})}
    assert VOLCANO.node_affinity == args["nodeaffinity.weight"]
    assert VOLCANO.image_locality == args["imagelocality.weight"]
    assert VOLCANO.resource_plugins == args["leastrequested.weight"] + args["balancedresource.weight"]


def test_kube_scheduler_profile_is_the_shipped_configuration():
    conf = yaml.safe_load((MANIFESTS / "kube-scheduler" / "scheduler-config.yaml").read_text())
    (profile,) = conf["profiles"]
    weights = {p["name"]: p["weight"] for p in profile["plugins"]["score"]["enabled"]}
    assert KUBE_SCHEDULER.node_affinity == weights["NodeAffinity"]
    assert KUBE_SCHEDULER.image_locality == weights.get("ImageLocality", 1)  # the default profile's weights
    assert KUBE_SCHEDULER.resource_plugins == weights.get("NodeResourcesFit", 1) + weights.get("NodeResourcesBalancedAllocation", 1)


def test_the_default_node_affinity_weight_would_lose_to_image_locality():
    """Why the shipped files raise it: at kube-scheduler's default of 2, no weights can win."""
    from dataclasses import replace

    assert replace(KUBE_SCHEDULER, node_affinity=2).points_to_win() > 60
