"""homing's namespace enforces the restricted Pod Security profile, and homing's own pod
meets it: the API server's Pod Security admission accepts the Deployment's
pod template in a namespace labelled as manifests/base/namespace.yaml labels it, and
refuses the same pod on the host's network (so the check is really in force)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from homing.kube.client import Kube, KubeError
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"


async def test_homing_pod_meets_the_restricted_profile_its_namespace_enforces(kube: Kube):
    labels = yaml.safe_load((BASE / "namespace.yaml").read_text())["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    ns = f"psa-{o.short_id()}"
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": labels}})
    await kube.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", body={"metadata": {"name": "homing"}})
    template = yaml.safe_load((BASE / "deployment.yaml").read_text())["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    spec.pop("priorityClassName")  # the PriorityClass is not installed here; Pod Security does not look at it
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "homing", "labels": template["metadata"]["labels"]}, "spec": spec}
    path = f"/api/v1/namespaces/{ns}/pods"
    await kube.request("POST", path, body=pod, query=[("dryRun", "All")])
    privileged = copy.deepcopy(pod)
    privileged["spec"]["hostNetwork"] = True
    with pytest.raises(KubeError) as refused:
        await kube.request("POST", path, body=privileged, query=[("dryRun", "All")])
    assert refused.value.status == 403 and "restricted" in refused.value.body
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}")
