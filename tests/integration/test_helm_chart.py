"""The Helm chart (charts/homing, docs/helm.md) installed into the local control plane: two
releases side by side, each in a namespace `--create-namespace` made, the first's operator
a working one, and `helm uninstall` leaving only what docs/helm.md says stays. Also what
the generated chart's tests held and the render tests do not: a values file reaching its
fields, no settings ConfigMap by default, bad values refused by the schema.
test_chart_render.py and test_chart_matches_kustomize.py render the chart without a cluster."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration
from homing.kube.client import Kube, KubeError
from homing_e2e import objects as o
from homing_e2e.chart_objects import cluster_name, fullname
from homing_e2e.cluster import build_binaries
from homing_e2e.helm import CHART, build_helm, helm, ok, template
from homing_e2e.pod_as_process import deployment_process


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    build_binaries()
    build_helm()


SETTINGS = {
    "scope": {"namespace_label": "team.example/homing", "namespace_label_value": "on", "pod_label": "team.example/homing-pod"},
    "lifetimes": {"ttl_seconds": 3600},
    "topology": {"resource_level_config": '{"default": {"level1": {"label": "example.com/switch"}}}'},
}


def test_values_reach_their_fields(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "image": {"repository": "registry.example/homing", "tag": "1.2.3", "pullPolicy": "Always"},
                "replicas": 3,
                "config": SETTINGS,
            }
        )
    )
    objs = template("--values", str(values), namespace="npu-ops")
    text = yaml.safe_dump_all(objs)
    assert "homing-system" not in text
    assert {obj["metadata"].get("namespace") for obj in objs} <= {None, "npu-ops"}
    for binding in (obj for obj in objs if obj["kind"].endswith("RoleBinding")):
        assert {s["namespace"] for s in binding["subjects"]} == {"npu-ops"}
    (dep,) = (obj for obj in objs if obj["kind"] == "Deployment")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"], dep["spec"]["replicas"]) == ("registry.example/homing:1.2.3", "Always", 3)
    assert "checksum/config" in dep["spec"]["template"]["metadata"]["annotations"]
    # The settings file is the operator's own format and loads into its model.
    (cm,) = (obj for obj in objs if obj["kind"] == "ConfigMap")
    loaded = Settings(**yaml.safe_load(cm["data"]["config.yaml"]))  # given values win over HOMING_* here
    assert (loaded.scope.namespace_label, loaded.lifetimes.ttl_seconds) == ("team.example/homing", 3600)
    assert loaded.topology.resource_level_config == SETTINGS["topology"]["resource_level_config"]
    # The webhook's selectors are those the operator writes from the same settings.
    (hook,) = (obj for obj in objs if obj["kind"] == "MutatingWebhookConfiguration")
    wanted = configuration(loaded.model_copy(update={"webhook": loaded.webhook.model_copy(update={"service_namespace": "npu-ops"})}), None)
    assert [{k: v for k, v in w.items() if k != "clientConfig"} for w in hook["webhooks"]] == [
        {k: v for k, v in w.items() if k != "clientConfig"} for w in wanted["webhooks"]]


def test_defaults_ship_no_settings_config_map() -> None:
    assert not [obj for obj in template() if obj["kind"] == "ConfigMap"]


@pytest.mark.parametrize(
    "bad", ["config.weights.home=heavy", "config.no_such_section.x=1", "replicas=-1", "image.tagg=1"]
)
def test_schema_refuses_bad_values(bad: str) -> None:
    result = helm("template", "homing", str(CHART), "--set", bad)
    assert result.returncode != 0 and "schema" in result.stderr, result.stderr


# -- installed on the local control plane --------------------------------------------------

RELEASE, CHART_NAMESPACE = "homing-e2e", "homing-helm-e2e"
BESIDE, BESIDE_NAMESPACE = "homing-e2e-b", "homing-helm-e2e-b"
SCOPE_LABEL = "helm-e2e.homing.io/enabled"  # not the other tests' label: their pods are not this operator's
POD_VALUES = {
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
    "nodeSelector": {"helm-e2e.homing.io/pool": "platform"},
    "tolerations": [{"key": "helm-e2e.homing.io/platform", "operator": "Exists", "effect": "NoSchedule"}],
    "imagePullSecrets": [{"name": "platform-pull"}],
}
VALUES = {**POD_VALUES, "config": {"scope": {"namespace_label": SCOPE_LABEL, "pod_label": SCOPE_LABEL}}}
# The second release serves another label's namespaces, as a shard: no pod is both releases'.
BESIDE_VALUES = {"config": {"shard": "b", "scope": {"namespace_label": "helm-e2e-b.homing.io/shard", "namespace_label_value": "b"}}}


def _install(release: str, namespace: str, values: dict[str, Any], tmp_path: Path, kubeconfig: Path) -> str:
    path = tmp_path / f"{release}.yaml"
    path.write_text(yaml.safe_dump(values))
    return ok(helm("install", release, str(CHART), "--namespace", namespace, "--create-namespace", "--values", str(path),
                   kubeconfig=kubeconfig))


@pytest.fixture
def installed(kubeconfig: Path, tmp_path: Path) -> Any:
    if os.environ.get("HOMING_E2E_KUBECONFIG"):
        pytest.skip("installs cluster-wide objects: only on the harness's own control plane")
    notes = _install(RELEASE, CHART_NAMESPACE, VALUES, tmp_path, kubeconfig)
    _install(BESIDE, BESIDE_NAMESPACE, BESIDE_VALUES, tmp_path, kubeconfig)
    yield notes
    for release, namespace in ((RELEASE, CHART_NAMESPACE), (BESIDE, BESIDE_NAMESPACE)):  # if the test stopped before
        helm("uninstall", release, "--namespace", namespace, kubeconfig=kubeconfig)


def _path(obj: dict[str, Any]) -> str:
    """The API path of a rendered object."""
    group_version, kind = obj["apiVersion"], obj["kind"]
    plural = kind.lower()[:-1] + "ies" if kind.endswith("y") else kind.lower() + ("es" if kind.endswith("s") else "s")
    base = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    namespace, name = obj["metadata"].get("namespace"), obj["metadata"]["name"]
    return f"{base}/namespaces/{namespace}/{plural}/{name}" if namespace else f"{base}/{plural}/{name}"


async def _exists(kube: Kube, path: str) -> bool:
    try:
        await kube.request("GET", path)
    except KubeError as err:
        if err.status == 404:
            return False
        raise
    return True


async def _names(kube: Kube, path: str) -> set[str]:
    return {item["metadata"]["name"] for item in (await kube.request("GET", path))["items"]}


@pytest.mark.cluster
async def test_helm_install_gives_a_working_operator(kube: Kube, kubeconfig: Path, installed: str) -> None:
    """The installed objects run as the operator: its Deployment's container (environment,
    settings ConfigMap) as a process that calls the API server as the chart's
    ServiceAccount. It writes its CA into the chart's webhook configuration, and a pod in
    a namespace opted in by the chart's scope label is patched back to its rank's home.
    A second release beside it owns its own objects; uninstalling both leaves the CRD and
    what homing made itself, nothing the chart installed."""
    for release, namespace in ((RELEASE, CHART_NAMESPACE), (BESIDE, BESIDE_NAMESPACE)):
        status = json.loads(ok(helm("status", release, "--namespace", namespace, "-o", "json", kubeconfig=kubeconfig)))
        assert status["info"]["status"] == "deployed"
    assert f"kubectl label namespace <your-namespace> {SCOPE_LABEL}=true" in installed  # NOTES.txt
    manifests = {
        release: [d for d in yaml.safe_load_all(ok(helm("get", "manifest", release, "--namespace", ns, kubeconfig=kubeconfig))) if d]
        for release, ns in ((RELEASE, CHART_NAMESPACE), (BESIDE, BESIDE_NAMESPACE))
    }
    # The values file's pod settings are in the installed Deployment.
    dep = await kube.request("GET", f"/apis/apps/v1/namespaces/{CHART_NAMESPACE}/deployments/{fullname(RELEASE)}")
    pod = dep["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == POD_VALUES["resources"]
    assert (pod["nodeSelector"], pod["tolerations"], pod["imagePullSecrets"]) == (
        POD_VALUES["nodeSelector"], POD_VALUES["tolerations"], POD_VALUES["imagePullSecrets"])
    # Two releases, two of everything cluster-wide.
    hooks = await _names(kube, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations")
    assert {cluster_name(RELEASE, CHART_NAMESPACE), cluster_name(BESIDE, BESIDE_NAMESPACE)} <= hooks
    for obj in manifests[RELEASE] + manifests[BESIDE]:
        assert await _exists(kube, _path(obj)), _path(obj)

    hook_name = cluster_name(RELEASE, CHART_NAMESPACE)
    workdir = Path(tempfile.mkdtemp(prefix="homing-helm-op-"))
    proc = await deployment_process(kube, kubeconfig, CHART_NAMESPACE, fullname(RELEASE), workdir)
    proc.start()
    try:
        async def hook_with_ca() -> dict | None:  # written once this replica leads
            got = await kube.request("GET", f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{hook_name}")
            return got if all(w["clientConfig"].get("caBundle") for w in got["webhooks"]) else None

        hook = await o.eventually(hook_with_ca, what="the operator's CA in the chart's webhook configuration")
        assert hook["webhooks"][0]["namespaceSelector"] == {"matchLabels": {SCOPE_LABEL: "true"}}
        tls = await o.eventually(
            lambda: kube.request("GET", f"/api/v1/namespaces/{CHART_NAMESPACE}/secrets/{fullname(RELEASE)}-webhook-tls"),
            what="TLS Secret",
        )
        assert tls["data"]

        ns = f"helm-{o.short_id()}"
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": {SCOPE_LABEL: "true"}}})
        a, _ = await o.node(kube, f"a-{ns}"), await o.node(kube, f"b-{ns}")
        owner = await o.owner_stand_in(kube, ns, "job")
        ann = {"volcano.sh/task-index": "0"}
        first = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
        assert o.decision(first)["reason"] == "no-memory"
        await o.bind(kube, ns, "job-0", a)
        await o.running(kube, ns, "job-0")
        await o.eventually(lambda: o.placement_memories(kube, ns), what="PlacementMemory written as the ServiceAccount")
        await o.delete_pod(kube, ns, "job-0")
        again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
        assert o.home(again) == a
        assert o.term_values(again, "In", weight=Settings().weights.home) == [[a]]
    finally:
        proc.stop()
        print(f"operator log: {proc.log_path}")

    # Uninstalled: nothing the chart installed is left; the CRD and what homing remembered
    # stay, and so do the namespaces and what the operator made itself (docs/helm.md).
    for release, namespace in ((RELEASE, CHART_NAMESPACE), (BESIDE, BESIDE_NAMESPACE)):
        ok(helm("uninstall", release, "--namespace", namespace, "--wait", kubeconfig=kubeconfig))
    for obj in manifests[RELEASE] + manifests[BESIDE]:
        assert not await _exists(kube, _path(obj)), f"{_path(obj)} outlived helm uninstall"
    assert await _exists(kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/placementmemories.homing.io")
    assert await o.placement_memories(kube, ns)
    for namespace, made in ((CHART_NAMESPACE, {f"{fullname(RELEASE)}-webhook-tls"}), (BESIDE_NAMESPACE, set())):
        assert await _names(kube, f"/api/v1/namespaces/{namespace}/secrets") == made
        assert await _names(kube, f"/api/v1/namespaces/{namespace}/configmaps") <= {"kube-root-ca.crt"}
        assert await _names(kube, f"/api/v1/namespaces/{namespace}/serviceaccounts") <= {"default"}
        leases = await _names(kube, f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases")
        assert all(name.startswith(f"{fullname(RELEASE)}-") for name in leases) and (namespace == CHART_NAMESPACE or not leases)
        for kind in ("apis/apps/v1/namespaces/{}/deployments", "api/v1/namespaces/{}/services",
                     "apis/rbac.authorization.k8s.io/v1/namespaces/{}/roles", "apis/networking.k8s.io/v1/namespaces/{}/networkpolicies"):
            assert not await _names(kube, "/" + kind.format(namespace)), kind.format(namespace)

