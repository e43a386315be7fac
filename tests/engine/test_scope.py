"""behaviour.md "Admission" scope: which pods the webhook leaves alone, checked on the pod itself."""
from __future__ import annotations

import pytest

from homing.engine.identity.scope import accelerator_resources, out_of_scope

from .helpers import owner, pod

PREFIXES = ["huawei.com/", "nvidia.com/"]
DS = owner(kind="DaemonSet", name="agent")
JOB = owner(kind="Job", name="train", api_version="batch.volcano.sh/v1alpha1")


def _with_init_only(resources):
    p = pod(resources={"cpu": "1"})
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": dict(resources)}}]
    return p


def _requests_only(resources):
    p = pod(resources={})
    p["spec"]["containers"][0]["resources"] = {"requests": dict(resources)}
    return p


def _daemonset_non_controller():
    p = pod(controller=JOB)
    p["metadata"]["ownerReferences"].append({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "d"})
    return p


@pytest.mark.parametrize(
    "the_pod, reason",
    [
        pytest.param(pod(controller=JOB), None, id="in-scope-gpu"),
        pytest.param(pod(controller=JOB, node_name="n1"), "already-bound", id="already-bound"),
        pytest.param(pod(controller=DS, node_name="n1"), "already-bound", id="bound-checked-first"),
        pytest.param(pod(controller=JOB, annotations={"homing.io/decision": "{}"}), "already-decided",
                     id="already-decided"),
        pytest.param(pod(controller=DS), "daemonset", id="daemonset"),
        pytest.param(_daemonset_non_controller(), None, id="daemonset-non-controller-ref-ignored"),
        pytest.param(pod(controller=JOB, resources={"cpu": "4", "memory": "8Gi"}), "no-accelerator",
                     id="cpu-only"),
        pytest.param(pod(controller=JOB, resources={}), "no-accelerator", id="no-resources"),
        pytest.param(pod(controller=JOB, resources={"nvidia.com/gpu": "1"}), None, id="nvidia-gpu"),
        pytest.param(pod(controller=JOB, resources={"huawei.com/Ascend910": "8"}), None, id="ascend-npu"),
        pytest.param(pod(controller=JOB, resources={"huawei.com/npu-core": "4"}), None, id="vnpu-npu-core"),
        pytest.param(pod(controller=JOB, resources={"huawei.com/Ascend910-4c": "1"}), None, id="vnpu-template"),
        pytest.param(_requests_only({"huawei.com/Ascend310P": "1"}), None, id="requests-only"),
        pytest.param(_with_init_only({"nvidia.com/gpu": "1"}), None, id="init-container"),
        pytest.param(pod(controller=JOB, resources={"amd.com/gpu": "1"}), "no-accelerator", id="other-vendor"),
        pytest.param(pod(controller=JOB, resources={"example.com/huawei.com/npu": "1"}), "no-accelerator",
                     id="prefix-must-be-at-start"),
        pytest.param({"metadata": None, "spec": None}, "no-accelerator", id="empty-pod"),
        pytest.param({"metadata": {"ownerReferences": ["x", None]}, "spec": {"containers": [None]}}, "no-accelerator",
                     id="garbage-refs-and-containers"),
    ],
)
def test_out_of_scope(the_pod, reason):
    assert out_of_scope(the_pod, PREFIXES) == reason


def test_prefixes_are_configurable():
    p = pod(controller=JOB, resources={"amd.com/gpu": "1", "nvidia.com/gpu": "1"})
    assert out_of_scope(p, ["amd.com/"]) is None
    assert out_of_scope(pod(controller=JOB), ["amd.com/"]) == "no-accelerator"


def test_accelerator_resources_lists_each_name_once():
    p = pod(resources={"nvidia.com/gpu": "1", "cpu": "2"})
    p["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": "1", "huawei.com/npu-core": "2"}
    p["spec"]["containers"].append({"name": "side", "resources": {"limits": {"nvidia.com/gpu": "1"}}})
    assert accelerator_resources(p, PREFIXES) == ["huawei.com/npu-core", "nvidia.com/gpu"]
