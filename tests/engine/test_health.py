"""behaviour.md "Health" health and 5.1 topology of a node, from its object."""
from __future__ import annotations

import pytest

from homing.config import Labels
from homing.engine.cluster.health import node_health, node_state, node_topology
from homing.engine.model import Health

from .helpers import node_obj

LABELS = Labels()
H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY


@pytest.mark.parametrize(
    "node, health",
    [
        pytest.param(node_obj(ready="True"), H, id="ready-true"),
        pytest.param(node_obj(ready="False"), U, id="ready-false"),
        pytest.param(node_obj(ready="Unknown"), U, id="ready-unknown"),
        pytest.param(node_obj(ready=None), U, id="ready-missing"),
        pytest.param({"metadata": {"name": "bare"}}, U, id="no-status"),
        pytest.param(node_obj(taints=["node.kubernetes.io/unreachable"]), U, id="taint-unreachable"),
        pytest.param(node_obj(taints=["node.kubernetes.io/not-ready"]), U, id="taint-not-ready"),
        pytest.param(node_obj(taints=["node.kubernetes.io/unschedulable"]), Health.UNAVAILABLE, id="taint-unschedulable"),
        pytest.param(node_obj(taints=["nvidia.com/gpu", "dedicated"]), H, id="unrelated-taints"),
        pytest.param(node_obj(unschedulable=True), Health.UNAVAILABLE, id="spec-unschedulable"),
        pytest.param(node_obj(unschedulable=True, ready="False"), U, id="cordoned-and-not-ready-is-a-fault"),
        pytest.param(node_obj(unschedulable=False), H, id="spec-schedulable"),
        pytest.param(node_obj(labels={"homing.io/fault": "true"}), U, id="fault-label"),
        pytest.param(node_obj(labels={"homing.io/fault": ""}), U, id="fault-label-empty-value"),
        pytest.param(node_obj(labels={"homing.io/sub-healthy": "x"}), S, id="sub-health-label"),
        pytest.param(node_obj(labels={"homing.io/sub-healthy": "x", "homing.io/fault": "y"}), U,
                     id="fault-beats-sub-health"),
        pytest.param(node_obj(ready="False", labels={"homing.io/sub-healthy": "x"}), U,
                     id="not-ready-beats-sub-health"),
    ],
)
def test_node_health(node, health):
    assert node_health(node, LABELS) is health


def test_health_labels_are_configurable():
    labels = Labels(fault="example.com/broken", sub_health="example.com/flaky")
    assert node_health(node_obj(labels={"homing.io/fault": "1"}), labels) is H
    assert node_health(node_obj(labels={"example.com/broken": "1"}), labels) is U
    assert node_health(node_obj(labels={"example.com/flaky": "1"}), labels) is S


def test_garbage_node_does_not_raise():
    node = {"metadata": None, "spec": {"taints": [None, {}]}, "status": {"conditions": [None, {"type": "Ready", "status": "True"}]}}
    assert node_health(node, LABELS) is H


@pytest.mark.parametrize(
    "labels, path",
    [
        pytest.param({"homing.io/rack-id": "2", "homing.io/superpod-id": "5"}, (("rack", "2"), ("superPod", "5")),
                     id="rack-and-superpod-innermost-first"),
        pytest.param({"homing.io/superpod-id": "5"}, (("superPod", "5"),), id="superpod-only"),
        pytest.param({"homing.io/rack-id": "7"}, (("rack", "7"),), id="rack-only"),
        pytest.param({}, (), id="none"),
        pytest.param({"homing.io/rack-id": "", "homing.io/superpod-id": "5"}, (("superPod", "5"),), id="empty-value-left-out"),
        pytest.param({"other/rack": "1"}, (), id="unrelated"),
    ],
)
def test_node_topology(labels, path):
    assert node_topology(node_obj(labels=labels), LABELS) == path


def test_topology_label_keys_are_configurable():
    labels = Labels(rack="topo/rack", superpod="topo/sp")
    node = node_obj(labels={"topo/rack": "r1", "topo/sp": "s1", "homing.io/rack-id": "x"})
    assert node_topology(node, labels) == (("rack", "r1"), ("superPod", "s1"))


def test_node_state():
    node = node_obj(name="a17", ready="True", labels={"homing.io/superpod-id": "5"})
    state = node_state(node, LABELS)
    assert (state.name, state.health, state.topology) == ("a17", H, (("superPod", "5"),))
    bad = node_state(node_obj(name="b2", ready="False"), LABELS)
    assert (bad.name, bad.health, bad.topology) == ("b2", U, ())
