"""The chart and the kustomize install (`kubectl apply -k manifests/`, and manifests/mindcluster)
cannot drift: rendered as release homing in homing-system, the chart gives the same objects
as the kustomize build, field by field, with only these differences, each by design:

- names of cluster-scoped objects (and of Roles in other namespaces) carry the release
  namespace, so two releases never share one (references to them follow);
- labels are the chart's standard ones, and selectors also name the release instance;
- the chart makes no Namespace (`--create-namespace`, docs/helm.md);
- the Deployment tells the operator more names through its environment (the base's
  variables are all there, with their values);
- the policies match this release's ServiceAccount exactly, not any account named homing
  (their CEL is compared with its whitespace collapsed: kustomize re-folds YAML lines);
- the PriorityClass's description names the release.

The CRD, the RBAC rules, the webhook entries, the policies' validations, the probes,
resources and security context are compared whole."""
from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from homing_e2e.chart_objects import CLUSTER_SCOPED, by_key, key
from homing_e2e.cluster import BIN_DIR, build_binaries
from homing_e2e.helm import CHART, build_helm, template

ROOT = Path(__file__).resolve().parents[2]
RELEASE, NAMESPACE = "homing", "homing-system"
CLUSTER = f"{NAMESPACE}-{RELEASE}"  # the chart's cluster-scoped names start so
# The kustomize objects' names where the chart's differ: (kind, namespace, name) -> name.
RENAMED = {
    ("ClusterRole", "", "homing"): CLUSTER,
    ("ClusterRoleBinding", "", "homing"): CLUSTER,
    ("MutatingWebhookConfiguration", "", "homing"): CLUSTER,
    ("PriorityClass", "", "homing-nonpreempting"): f"{CLUSTER}-nonpreempting",
    ("ValidatingAdmissionPolicy", "", "homing-pod-deletion-cost"): f"{CLUSTER}-pod-deletion-cost",
    ("ValidatingAdmissionPolicyBinding", "", "homing-pod-deletion-cost"): f"{CLUSTER}-pod-deletion-cost",
    ("ValidatingAdmissionPolicy", "", "homing-node-labels"): f"{CLUSTER}-node-labels",
    ("ValidatingAdmissionPolicyBinding", "", "homing-node-labels"): f"{CLUSTER}-node-labels",
    ("Role", "kube-system", "homing-deviceinfo"): f"{CLUSTER}-kube-system",
    ("RoleBinding", "kube-system", "homing-deviceinfo"): f"{CLUSTER}-kube-system",
    ("Role", "mindx-dl", "homing-nodeinfo"): f"{CLUSTER}-mindx-dl",
    ("RoleBinding", "mindx-dl", "homing-nodeinfo"): f"{CLUSTER}-mindx-dl",
}
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{RELEASE}"


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    build_binaries()  # kubectl, for kustomize
    build_helm()


def kustomize(directory: str) -> list[dict[str, Any]]:
    """What `kubectl apply -k` applies. kustomize's `namespace:` also lands on kinds it does not
    know to be cluster-scoped (the ValidatingAdmissionPolicies); the API server ignores it."""
    out = subprocess.run([str(BIN_DIR / "kubectl"), "kustomize", str(ROOT / directory)],
                         capture_output=True, text=True, timeout=120, check=True)
    objs = [doc for doc in yaml.safe_load_all(out.stdout) if doc]
    for obj in objs:
        if obj["kind"] in CLUSTER_SCOPED:
            obj["metadata"].pop("namespace", None)
    return objs


def renamed(kind: str, namespace: str, name: str) -> str:
    return RENAMED.get((kind, namespace, name), name)


def without_instance(node: Any) -> Any:
    """Selectors (and pod labels) with the chart's app.kubernetes.io/instance taken out."""
    if isinstance(node, dict):
        return {k: without_instance(v) for k, v in node.items() if k != "app.kubernetes.io/instance"}
    if isinstance(node, list):
        return [without_instance(v) for v in node]
    return node


def normal_base(obj: dict[str, Any]) -> dict[str, Any]:
    """A kustomize object as the chart should render it, labels aside."""
    obj = copy.deepcopy(obj)
    kind, meta = obj["kind"], obj["metadata"]
    obj["metadata"] = {k: v for k, v in meta.items() if k in ("name", "namespace")}
    obj["metadata"]["name"] = renamed(kind, meta.get("namespace", ""), meta["name"])
    if "roleRef" in obj:
        cluster = obj["roleRef"]["kind"] == "ClusterRole"
        obj["roleRef"]["name"] = renamed(obj["roleRef"]["kind"], "" if cluster else meta.get("namespace", ""), obj["roleRef"]["name"])
    for rule in obj.get("rules") or []:
        if rule.get("resources") == ["mutatingwebhookconfigurations"]:
            rule["resourceNames"] = [renamed("MutatingWebhookConfiguration", "", n) for n in rule["resourceNames"]]
    if kind == "ValidatingAdmissionPolicyBinding":
        obj["spec"]["policyName"] = renamed("ValidatingAdmissionPolicy", "", obj["spec"]["policyName"])
    if kind == "Deployment":
        pod = obj["spec"]["template"]["spec"]
        pod["priorityClassName"] = renamed("PriorityClass", "", pod["priorityClassName"])
    return obj


def normal_chart(obj: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    obj = without_instance(copy.deepcopy(obj))
    kind = obj["kind"]
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}
    if kind == "Deployment":
        (c,) = obj["spec"]["template"]["spec"]["containers"]
        (b,) = base["spec"]["template"]["spec"]["containers"]
        wanted = {e["name"] for e in b["env"]}
        assert wanted <= {e["name"] for e in c["env"]}, "the base's environment, every variable"
        c["env"] = [e for e in c["env"] if e["name"] in wanted]
        b["env"] = sorted(b["env"], key=lambda e: e["name"])
        c["env"] = sorted(c["env"], key=lambda e: e["name"])
    if kind == "ValidatingAdmissionPolicy":
        (condition,) = obj["spec"].pop("matchConditions")
        assert condition["expression"] == f'request.userInfo.username == "{SERVICE_ACCOUNT}"'
        base["spec"].pop("matchConditions")
        for spec in (obj["spec"], base["spec"]):  # CEL: kustomize re-folds the YAML's line breaks
            for v in spec["validations"]:
                v["expression"] = " ".join(v["expression"].split())
    if kind == "PriorityClass":
        obj.pop("description")
        base.pop("description")
    return obj


@pytest.mark.parametrize(("values", "kustomization"), [([], "manifests"), (["--set", "mindcluster.enabled=true"], "manifests/mindcluster")],
                         ids=["default", "mindcluster"])
def test_the_chart_renders_what_kustomize_builds(values: list[str], kustomization: str) -> None:
    built = {k: o for k, o in by_key(kustomize(kustomization)).items() if k[0] != "Namespace"}
    charted = by_key(template(*values, release=RELEASE, namespace=NAMESPACE))
    expected = {(k[0], k[1], renamed(*k)): o for k, o in built.items()}
    assert sorted(charted) == sorted(expected)
    for k, obj in expected.items():
        base = normal_base(obj)
        assert normal_chart(charted[k], base) == base, k


def test_the_chart_s_crd_is_the_repository_s() -> None:
    assert (CHART / "crds" / "placementmemories.homing.io.yaml").read_text() == (ROOT / "crds" / "placementmemory.yaml").read_text()


def test_the_chart_s_alerts_are_manifests_monitoring_s() -> None:
    rules = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    assert rules == yaml.safe_load((ROOT / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())["spec"]


def test_the_chart_s_service_monitor_is_manifests_monitoring_s() -> None:
    (charted,) = [o for o in template("--set", "serviceMonitor.enabled=true") if o["kind"] == "ServiceMonitor"]
    (built,) = [o for o in kustomize("manifests/monitoring") if o["kind"] == "ServiceMonitor"]
    assert without_instance(charted["spec"]) == built["spec"]
    assert key(charted) == key(built)
