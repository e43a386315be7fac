"""The tidal best practice as shipped (manifests/tidal, docs/scheduler-settings.md): each
variant is accepted by a real API server, and its autoscaler scales inference in by steps
no larger than one training gang, the measured condition for every night's gang to find
its homes free."""
from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from homing.kube.client import Kube
from homing_e2e import objects, volcano
from homing_e2e.kubectl import kubectl, ok

ROOT = Path(__file__).resolve().parents[2]
TIDAL = ROOT / "manifests" / "tidal"
VARIANTS = ("preempt", "reclaim", "gangpreempt", "gangreclaim")
NAMESPACES = ("ai", "volcano-system")  # the manifests' namespaced objects are dry-run into these
JOB_CRDS = ("batch.volcano.sh_jobs.yaml", "scheduling.volcano.sh_queues.yaml")


def common(kind: str) -> dict:
    """The one object of `kind` in manifests/tidal/common."""
    listed = yaml.safe_load((TIDAL / "common" / "kustomization.yaml").read_text())["resources"]
    found = [doc for name in listed for doc in yaml.safe_load_all((TIDAL / "common" / name).read_text())
             if doc and doc["kind"] == kind]
    assert len(found) == 1, f"{kind}: {len(found)} in manifests/tidal/common"
    return found[0]


def largest_scale_in_step(hpa: dict) -> float:
    """The most replicas one scale-down period may remove at any scale, as the autoscaler
    combines its policies (selectPolicy Max by default, Min, or Disabled). A Percent policy
    grows with the replicas, so it bounds nothing: whoever raises maxReplicas later must not
    bring back the scale-in at once."""
    down = (hpa["spec"].get("behavior") or {}).get("scaleDown") or {}
    if down.get("selectPolicy") == "Disabled":
        return 0
    policies = down.get("policies") or [{"type": "Percent", "value": 100}]  # the autoscaler's default
    steps = [p["value"] if p["type"] == "Pods" else math.inf for p in policies]
    return min(steps) if down.get("selectPolicy") == "Min" else max(steps)


@pytest.mark.parametrize(("policies", "select", "step"), [
    (None, None, math.inf),  # no behaviour: the autoscaler may remove everything at once
    ([{"type": "Pods", "value": 16, "periodSeconds": 15}], None, 16),
    ([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 10, "periodSeconds": 15}], None, math.inf),
    ([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}], "Min", 4),
    ([{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Pods", "value": 8, "periodSeconds": 60}], None, 8),
    ([{"type": "Pods", "value": 16, "periodSeconds": 15}], "Disabled", 0),
])
def test_largest_scale_in_step(policies: list | None, select: str | None, step: float) -> None:
    down = {k: v for k, v in (("policies", policies), ("selectPolicy", select)) if v is not None}
    hpa = {"spec": {"maxReplicas": 12, "behavior": {"scaleDown": down} if down else {}}}
    assert largest_scale_in_step(hpa) == step


def test_inference_scales_in_by_at_most_one_gang() -> None:
    hpa, deployment, job = common("HorizontalPodAutoscaler"), common("Deployment"), common("Job")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert hpa["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert hpa["spec"]["minReplicas"] == deployment["spec"]["replicas"]
    assert 0 < largest_scale_in_step(hpa) <= job["spec"]["minAvailable"]


@pytest.fixture(scope="module")
def tidal_namespaces(kubeconfig: Path) -> Iterator[None]:
    """The namespaces exist for real; at the end those this test made are deleted."""
    existing = set(ok(kubectl(kubeconfig, "get", "namespaces", "-o", "name")).split())
    made = [ns for ns in NAMESPACES if f"namespace/{ns}" not in existing]
    for ns in made:
        ok(kubectl(kubeconfig, "create", "namespace", ns))
    yield
    if made:
        kubectl(kubeconfig, "delete", "namespace", *made, "--wait=false", "--ignore-not-found")


@pytest.mark.cluster
@pytest.mark.parametrize("variant", VARIANTS)
async def test_variant_applies(variant: str, kubeconfig: Path, kube: Kube, tidal_namespaces: None) -> None:
    """Server-side dry run: every object of the variant, the autoscaler among them, is valid."""
    for name in JOB_CRDS:
        await objects.install_crd(kube, volcano.crd(name))
    out = ok(kubectl(kubeconfig, "apply", "-k", str(TIDAL / variant), "--dry-run=server", "-o", "name"))
    names = set(out.split())
    assert {"horizontalpodautoscaler.autoscaling/qwen-infer", "deployment.apps/qwen-infer",
            "job.batch.volcano.sh/llama-train", "configmap/volcano-scheduler-configmap"} <= names, names
