"""homing's node patches are limited to its own labels (image labels, and the MindCluster
overlay's two topology keys): a ValidatingAdmissionPolicy on the real API server refuses any
other change homing's ServiceAccount makes to a node, and lets those labels through."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from homing.config import Settings
from homing.engine.cluster.images import image_label
from homing.kube.client import MERGE_PATCH, Kube
from homing_e2e import objects as o
from homing_e2e.kubectl import kubectl

pytestmark = pytest.mark.cluster

BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"


def policy_documents() -> list[dict]:
    return list(yaml.safe_load_all((BASE / "node-label-policy.yaml").read_text()))


def node_rbac() -> list[dict]:
    """The base's cluster-wide node patch grant (what the policy narrows), alone in a role."""
    (role,) = [d for d in yaml.safe_load_all((BASE / "rbac.yaml").read_text()) if d and d["kind"] == "ClusterRole"]
    rules = [r for r in role["rules"] if r.get("resources") == ["nodes"] and r["verbs"] == ["patch"]]
    assert rules, "the base grants homing its node patches"
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "homing-node-labels-test"}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "homing-node-labels-test"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "homing-node-labels-test"},
             "subjects": [{"kind": "ServiceAccount", "name": "homing", "namespace": "homing-system"}]}]


@pytest.fixture
def policy_applied(kubeconfig: Path, tmp_path: Path) -> Iterator[None]:
    files = tmp_path / "policy.yaml"
    files.write_text(yaml.safe_dump_all(policy_documents() + node_rbac()))
    out = kubectl(kubeconfig, "apply", "-f", str(files))
    assert out.returncode == 0, out.stderr
    yield
    kubectl(kubeconfig, "delete", "-f", str(files), "--ignore-not-found", "--wait=false")


def test_the_policy_names_the_label_keys_homing_writes():
    variables = {v["name"]: v["expression"] for v in policy_documents()[0]["spec"]["variables"]}
    labels = Settings().labels
    assert json.loads(variables["allowed"]) == [labels.superpod, labels.rack]
    assert json.loads(variables["imagePrefix"]) == labels.image_prefix + "/"


async def patch_as_homing(kube: Kube, node: str, body: dict) -> tuple[int, str]:
    """A merge patch of the node as homing's ServiceAccount sends it (deviceinfo.py)."""
    return await o.patch_as_homing(kube, f"/api/v1/nodes/{node}", body)


async def test_homing_may_set_its_two_labels_and_nothing_else(kubeconfig: Path, kube: Kube, policy_applied: None):
    node = await o.node(kube, f"vap-{o.short_id()}", labels={"team": "a"})
    refused_other_label = {"metadata": {"labels": {"team": "b"}}}

    async def in_force() -> bool:  # the policy is compiled and bound a moment after it is created
        status, text = await patch_as_homing(kube, node, refused_other_label)
        return status == 422 and "homing may" in text or (status == 200 and await undo())

    async def undo() -> bool:  # let through before the policy was in force: put the label back
        await kube.request("PATCH", f"/api/v1/nodes/{node}", body={"metadata": {"labels": {"team": "a"}}}, content_type=MERGE_PATCH)
        return False

    await o.eventually(in_force, timeout=30, what="the node-label policy in force")
    superpod, rack = Settings().labels.superpod, Settings().labels.rack
    status, text = await patch_as_homing(kube, node, {"metadata": {"labels": {superpod: "7", rack: "3"}}})
    assert status == 200, text
    image = image_label("train:24.1", Settings().labels.image_prefix)
    status, text = await patch_as_homing(kube, node, {"metadata": {"labels": {image: "train_24.1"}}})
    assert status == 200, text
    status, text = await patch_as_homing(kube, node, {"metadata": {"labels": {image: None}}})
    assert status == 200, text
    refused = {
        "another label": refused_other_label,
        "a removed label": {"metadata": {"labels": {"team": None}}},
        "the spec": {"spec": {"unschedulable": True}},
        "a taint": {"spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}},
        "an annotation": {"metadata": {"annotations": {"x": "y"}}},
    }
    for what, body in refused.items():
        status, text = await patch_as_homing(kube, node, body)
        assert status == 422 and "homing may" in text, f"{what}: {status} {text[:300]}"
    got = await kube.request("GET", f"/api/v1/nodes/{node}")
    assert got["metadata"]["labels"]["team"] == "a" and got["metadata"]["labels"][superpod] == "7"
    assert not got["spec"].get("unschedulable")
    # Anyone else (here the test's admin) is not held by it.
    admin = kubectl(kubeconfig, "label", "node", node, "team=c", "--overwrite")
    assert admin.returncode == 0, admin.stderr
