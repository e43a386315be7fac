"""The install manifests: `kubectl apply -k manifests/` is accepted by a real API
server, the generated files match their generators, and the RBAC grants exactly what
the operator needs (checked with SubjectAccessReview for its ServiceAccount)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from homing.config import Settings
from homing.kube.client import Kube, KubeError
from homing.tools import gencrd, genmanifests
from homing_e2e import objects
from homing_e2e.kubectl import kubectl, ok

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "homing-system"
SA_USER = f"system:serviceaccount:{NAMESPACE}:homing"
SA_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}", "system:authenticated"]

EXPECTED_OBJECTS = {
    "namespace/homing-system",
    "customresourcedefinition.apiextensions.k8s.io/placementmemories.homing.io",
    "serviceaccount/homing",
    "clusterrole.rbac.authorization.k8s.io/homing",
    "clusterrolebinding.rbac.authorization.k8s.io/homing",
    "role.rbac.authorization.k8s.io/homing-tls",
    "rolebinding.rbac.authorization.k8s.io/homing-tls",
    "service/homing-webhook",
    "service/homing-metrics",
    "poddisruptionbudget.policy/homing",
    "priorityclass.scheduling.k8s.io/homing-nonpreempting",
    "networkpolicy.networking.k8s.io/homing",
    "role.rbac.authorization.k8s.io/homing-leases",
    "rolebinding.rbac.authorization.k8s.io/homing-leases",
    "deployment.apps/homing",
    "mutatingwebhookconfiguration.admissionregistration.k8s.io/homing",
    "validatingadmissionpolicy.admissionregistration.k8s.io/homing-pod-deletion-cost",
    "validatingadmissionpolicybinding.admissionregistration.k8s.io/homing-pod-deletion-cost",
    "validatingadmissionpolicy.admissionregistration.k8s.io/homing-node-labels",
    "validatingadmissionpolicybinding.admissionregistration.k8s.io/homing-node-labels",
}


def _really_apply(kubeconfig: Path, *files: str) -> Iterator[None]:
    """Applies the files for real; at the end deletes what did not exist before, so a
    real installation (HOMING_E2E_KUBECONFIG) is left as it was."""
    paths = [f"--filename={MANIFESTS / f}" for f in files]
    existing = set(ok(kubectl(kubeconfig, "get", *paths, "--ignore-not-found", "-o", "name")).split())
    created = set(ok(kubectl(kubeconfig, "apply", *paths, "-o", "name")).split()) - existing
    yield
    if created:
        kubectl(kubeconfig, "delete", *sorted(created), "--wait=false", "--ignore-not-found")


@pytest.fixture(scope="module")
def installed_namespace(kubeconfig: Path) -> Iterator[None]:
    yield from _really_apply(kubeconfig, "base/namespace.yaml")


@pytest.fixture(scope="module")
def installed_rbac(kubeconfig: Path, installed_namespace: None) -> Iterator[None]:
    yield from _really_apply(kubeconfig, "base/serviceaccount.yaml", "base/rbac.yaml")


@pytest.fixture
async def rbac_in_effect(kube: Kube, installed_rbac: None) -> None:
    """The authorizer sees new bindings after a moment: wait for one granted verb, so
    that denials are not merely "not yet"."""

    async def seen() -> bool:
        return await allowed(kube, "watch", "homing.io", "placementmemories", "", "", "")

    await objects.eventually(seen, timeout=30, what="the homing ClusterRoleBinding in effect")


# -- generated files ---------------------------------------------------------------------


def test_webhook_manifest_is_generated() -> None:
    assert (MANIFESTS / "base" / "webhook.yaml").read_text() == genmanifests.render_webhook(), (
        "manifests/webhook.yaml is stale: run `python -m homing.tools.genmanifests`"
    )


def test_webhook_manifest_is_what_the_operator_writes() -> None:
    from homing.kube.admission.webhookconfig import configuration

    assert yaml.safe_load((MANIFESTS / "base" / "webhook.yaml").read_text()) == configuration(Settings(), None)


def test_crd_is_generated() -> None:
    assert (ROOT / "crds" / "placementmemory.yaml").read_text() == gencrd.render(), (
        "crds/placementmemory.yaml is stale: run `python -m homing.tools.gencrd`"
    )


def test_config_example_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The example ConfigMap's file loads into Settings (unknown keys are refused)."""
    cm = yaml.safe_load((MANIFESTS / "examples" / "config.yaml").read_text())
    assert (cm["kind"], cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("ConfigMap", "homing-config", NAMESPACE)
    file = tmp_path / "config.yaml"
    file.write_text(cm["data"]["config.yaml"])
    for name in [n for n in os.environ if n.startswith("HOMING_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOMING_CONFIG_FILE", str(file))
    settings = Settings()
    given = yaml.safe_load(file.read_text())
    assert {"weights", "scope", "lifetimes"} <= set(given)
    for section, values in given.items():
        for key, value in values.items():
            assert getattr(getattr(settings, section), key) == value, f"{section}.{key}"


def test_deployment_matches_the_settings() -> None:
    """Ports, probes and names in deployment.yaml agree with the defaults the code uses."""
    s = Settings()
    dep = yaml.safe_load((MANIFESTS / "base" / "deployment.yaml").read_text())
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"webhook": s.webhook.port, "metrics": s.metrics_port, "health": s.health_port,
                     "liveness": s.liveness_port}
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["HOMING_WEBHOOK__SERVICE_NAME"] == s.webhook.service_name
    assert env["HOMING_WEBHOOK__SERVICE_NAMESPACE"] == s.webhook.service_namespace == NAMESPACE
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "liveness"}  # kopf's endpoint
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert s.webhook.tls_dir.startswith("/tmp/")
    assert {"name": "tmp", "mountPath": "/tmp"} in c["volumeMounts"]
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["strategy"]["type"] == "RollingUpdate"
    svc = yaml.safe_load((MANIFESTS / "base" / "service.yaml").read_text())
    assert svc["metadata"]["name"] == s.webhook.service_name
    assert {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"} in svc["spec"]["ports"]


# -- the API server's view ---------------------------------------------------------------


async def test_kustomization_applies(kubeconfig: Path, kube: Kube, installed_namespace: None) -> None:
    """Server-side dry run of everything; the namespace exists for real (namespaced
    objects cannot be dry-run into a namespace that does not exist)."""
    out = ok(kubectl(kubeconfig, "apply", "-k", str(MANIFESTS), "--dry-run=server", "-o", "name"))
    assert set(out.split()) == EXPECTED_OBJECTS
    with pytest.raises(KubeError) as err:  # a dry run: nothing was made
        await kube.request("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/homing")
    assert err.value.status == 404


# (verb, group, resource, subresource, namespace, name)
NEEDED = [
    *[("list", "", r, "", "", "") for r in ("pods", "nodes", "namespaces")],
    *[("watch", "", r, "", "", "") for r in ("pods", "nodes", "namespaces")],
    ("list", "apps", "replicasets", "", "", ""),
    ("watch", "apps", "replicasets", "", "", ""),
    ("list", "scheduling.volcano.sh", "podgroups", "", "", ""),
    ("watch", "scheduling.volcano.sh", "podgroups", "", "", ""),
    ("list", "topology.volcano.sh", "hypernodes", "", "", ""),
    ("watch", "topology.volcano.sh", "hypernodes", "", "", ""),
    ("list", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "", ""),
    ("watch", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "", ""),
    ("list", "jobset.x-k8s.io", "jobsets", "", "", ""),
    ("watch", "jobset.x-k8s.io", "jobsets", "", "", ""),
    ("list", "homing.io", "placementmemories", "", "", ""),
    ("watch", "homing.io", "placementmemories", "", "", ""),
    ("create", "homing.io", "placementmemories", "", "team-a", ""),
    ("delete", "homing.io", "placementmemories", "", "team-a", "deployment-llama-0123"),
    ("patch", "homing.io", "placementmemories", "status", "team-a", "deployment-llama-0123"),
    ("create", "", "events", "", "team-a", ""),
    ("create", "", "events", "", NAMESPACE, ""),
    ("list", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""),
    ("watch", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""),
    ("get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "homing"),
    ("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "homing"),
    ("get", "", "secrets", "", NAMESPACE, "homing-webhook-tls"),
    ("update", "", "secrets", "", NAMESPACE, "homing-webhook-tls"),
    ("create", "", "secrets", "", NAMESPACE, ""),
    *[(verb, "coordination.k8s.io", "leases", "", NAMESPACE, "homing-leader") for verb in ("get", "update")],
    ("create", "coordination.k8s.io", "leases", "", NAMESPACE, ""),
    ("list", "coordination.k8s.io", "leases", "", NAMESPACE, ""),
    ("delete", "coordination.k8s.io", "leases", "", NAMESPACE, "homing-member-old"),
    # deletion_marks.py: the pod-deletion-cost mark (the policy in manifests/base narrows it to that)
    ("patch", "", "pods", "", "team-a", "p"),
    # image_labels.py: homing's image labels on a node (node-label-policy.yaml narrows it to them)
    ("patch", "", "nodes", "", "", "n"),
]

FORBIDDEN = [
    ("delete", "", "pods", "", "team-a", "p"),
    ("create", "", "pods", "", "team-a", ""),
    ("update", "", "pods", "", "team-a", "p"),
    ("patch", "", "pods", "status", "team-a", "p"),
    ("create", "", "pods", "eviction", "team-a", "p"),
    ("create", "", "pods", "binding", "team-a", "p"),
    ("update", "", "nodes", "", "", "n"),
    ("patch", "", "nodes", "status", "", "n"),
    ("patch", "", "namespaces", "", "", "team-a"),
    ("get", "", "secrets", "", NAMESPACE, "other"),
    ("update", "", "secrets", "", NAMESPACE, "other"),
    ("list", "", "secrets", "", "", ""),
    ("list", "", "secrets", "", NAMESPACE, ""),
    ("create", "", "secrets", "", "team-a", ""),
    ("delete", "", "secrets", "", NAMESPACE, "homing-webhook-tls"),
    ("list", "", "configmaps", "", "", ""),
    ("list", "", "configmaps", "", "kube-system", ""),
    ("update", "scheduling.volcano.sh", "podgroups", "", "team-a", "pg"),
    ("create", "topology.volcano.sh", "hypernodes", "", "", ""),
    ("update", "leaderworkerset.x-k8s.io", "leaderworkersets", "", "team-a", "l"),
    ("get", "jobset.x-k8s.io", "jobsets", "", "team-a", "j"),
    ("list", "batch", "jobs", "", "", ""),
    ("patch", "", "events", "", "team-a", "e"),
    ("delete", "", "events", "", "team-a", "e"),
    ("delete", "apps", "replicasets", "", "team-a", "r"),
    ("update", "apps", "deployments", "", "team-a", "d"),
    ("update", "homing.io", "placementmemories", "", "team-a", "m"),
    ("patch", "homing.io", "placementmemories", "", "team-a", "m"),
    ("deletecollection", "homing.io", "placementmemories", "", "team-a", ""),
    ("create", "apiextensions.k8s.io", "customresourcedefinitions", "", "", ""),
    ("update", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "placementmemories.homing.io"),
    ("delete", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "placementmemories.homing.io"),
    ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "other"),
    ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", ""),
    ("update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "other"),
    ("get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "other"),
    ("list", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", ""),
    ("delete", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "homing"),
    ("update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "homing"),
    ("update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", "homing"),
    ("create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", ""),
    ("escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "homing"),
    ("impersonate", "", "serviceaccounts", "", NAMESPACE, "default"),
    ("update", "coordination.k8s.io", "leases", "", "kube-system", "kube-scheduler"),
    ("list", "coordination.k8s.io", "leases", "", "", ""),
]


async def allowed(kube: Kube, verb: str, group: str, resource: str, sub: str, ns: str, name: str) -> bool:
    attrs = {"verb": verb, "group": group, "resource": resource}
    attrs.update({k: v for k, v in {"subresource": sub, "namespace": ns, "name": name}.items() if v})
    review = await kube.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body={
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": SA_USER, "groups": SA_GROUPS, "resourceAttributes": attrs},
        },
    )
    return bool(review.get("status", {}).get("allowed"))


def _show(case: tuple[str, ...]) -> str:
    verb, group, resource, sub, ns, name = case
    what = f"{resource}.{group}" if group else resource
    return f"{verb} {what}{'/' + sub if sub else ''} {ns or '*'}/{name or '*'}"


async def test_rbac_grants_what_the_operator_uses(kube: Kube, rbac_in_effect: None) -> None:
    missing = [_show(c) for c in NEEDED if not await allowed(kube, *c)]
    assert not missing, f"not allowed, but the operator needs: {missing}"


async def test_rbac_denies_the_rest(kube: Kube, rbac_in_effect: None) -> None:
    granted = [_show(c) for c in FORBIDDEN if await allowed(kube, *c)]
    assert not granted, f"allowed, but the operator never does this: {granted}"


# -- the MindCluster overlay ----------------------------------------------------------------

MINDCLUSTER_EXTRA = {
    "role.rbac.authorization.k8s.io/homing-deviceinfo",
    "rolebinding.rbac.authorization.k8s.io/homing-deviceinfo",
    "role.rbac.authorization.k8s.io/homing-nodeinfo",
    "rolebinding.rbac.authorization.k8s.io/homing-nodeinfo",
}


async def test_mindcluster_overlay_applies_and_turns_the_sources_on(kubeconfig: Path, kube: Kube, installed_namespace: None) -> None:
    try:
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "mindx-dl"}})
    except KubeError as err:
        assert err.status == 409  # MindCluster's namespace exists already
    out = ok(kubectl(kubeconfig, "apply", "-k", str(MANIFESTS / "mindcluster"), "--dry-run=server", "-o", "name"))
    assert set(out.split()) == EXPECTED_OBJECTS | MINDCLUSTER_EXTRA
    rendered = ok(kubectl(kubeconfig, "kustomize", str(MANIFESTS / "mindcluster")))
    deployment = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["HOMING_TOPOLOGY__DEVICE_INFO"] == env["HOMING_TOPOLOGY__NODED"] == "true"
    settings = Settings(topology={"device_info": env["HOMING_TOPOLOGY__DEVICE_INFO"], "noded": env["HOMING_TOPOLOGY__NODED"]})
    assert settings.topology.device_info and settings.topology.noded


async def test_the_overlay_for_clusters_before_1_30_leaves_out_the_policy_and_the_marks(
        kubeconfig: Path, kube: Kube, installed_namespace: None) -> None:
    """Before Kubernetes 1.30 the API server has no ValidatingAdmissionPolicy: the install would
    fail on it, and without it nothing holds homing's pod patches. The overlay applies (dry run,
    on this API server) without the policy, its binding and the pods `patch` grant, with the
    marks switched off."""
    out = ok(kubectl(kubeconfig, "apply", "-k", str(MANIFESTS / "before-1.30"), "--dry-run=server", "-o", "name"))
    policy = {f"{kind}.admissionregistration.k8s.io/homing-{name}" for name in ("pod-deletion-cost", "node-labels")
              for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding")}
    assert set(out.split()) == EXPECTED_OBJECTS - policy
    rendered = [d for d in yaml.safe_load_all(ok(kubectl(kubeconfig, "kustomize", str(MANIFESTS / "before-1.30")))) if d]
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert not Settings(deletion_cost={"enabled": env["HOMING_DELETION_COST__ENABLED"]}).deletion_cost.enabled
    assert not Settings(preferences={"image_labels": env["HOMING_PREFERENCES__IMAGE_LABELS"]}).preferences.image_labels
    role = next(d for d in rendered if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "homing")
    assert not any({"pods", "nodes"} & set(r.get("resources", ())) and "patch" in r["verbs"] for r in role["rules"])
