"""The Helm chart (charts/homing, docs/helm.md): generated from manifests/ and up to date,
lint-clean, rendering exactly what kustomize builds, every value reaching its fields,
and installed into the local control plane, a working operator."""
from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from homing.config import Settings
from homing.kube.client import Kube
from homing.tools import genchart
from homing.tools.chart import kustomize
from homing_e2e import objects as o
from homing_e2e.cluster import BIN_DIR, build_binaries
from homing_e2e.helm import CHART, build_helm, helm, ok, template
from homing_e2e.pod_as_process import deployment_process

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(BIN_DIR / "kubectl")


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    build_binaries()  # kubectl, for kustomize
    build_helm()


def by_key(objs: list[dict[str, Any]]) -> dict[kustomize.Key, dict[str, Any]]:
    out = {kustomize.key(obj): obj for obj in objs}
    assert len(out) == len(objs), "two objects with one name"
    return out


def test_chart_is_generated_from_the_manifests() -> None:
    files = {str(p.relative_to(CHART)): p.read_text() for p in CHART.rglob("*") if p.is_file()}
    assert files == genchart.render(KUBECTL), "charts/homing is stale: run `make manifests`"


@pytest.mark.parametrize("values", [[], ["--set", "mindcluster.enabled=true"]], ids=["default", "mindcluster"])
def test_helm_lint(values: list[str]) -> None:
    ok(helm("lint", "--strict", str(CHART), *values))


@pytest.mark.parametrize(
    ("values", "kustomization"),
    [([], "manifests"), (["--set", "mindcluster.enabled=true"], "manifests/mindcluster")],
    ids=["default", "mindcluster"],
)
def test_chart_renders_what_kustomize_builds(values: list[str], kustomization: str) -> None:
    """Every object, whole: nothing only in one, nothing different in any field."""
    charted = by_key(template(*values))
    built = by_key(kustomize.build(KUBECTL, ROOT / kustomization))
    assert sorted(charted) == sorted(built)
    for key, obj in built.items():
        assert charted[key] == obj, key


def _synthetic_manifests() -> tuple[list[dict], list[dict], dict]:
    """A base and an overlay that differ in every way the generator handles: appended list
    items and added keys (blocks), a changed value and a dropped list item (the object kept
    whole under if/else), objects only in one, and literal template braces."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "homing-system"}}
    container = {"name": "homing", "image": "homing:0.1.0", "env": [{"name": "A", "value": "1"}]}
    pod = {"metadata": {"labels": {"app": "homing"}},
           "spec": {"containers": [container], "volumes": [{"name": "config", "configMap": {"name": "homing-config"}}]}}
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "homing", "namespace": "homing-system"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "homing"}}, "template": pod},
    }
    rules = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rules", "namespace": "homing-system"},
             "data": {"a": "{{ $labels.x }} down}}", "b": "1"}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "gone", "namespace": "homing-system"},
           "spec": {"ports": [{"port": 1}, {"port": 2}]}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "extra", "namespace": "kube-system"},
            "rules": []}
    legacy = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "legacy", "namespace": "homing-system"}}
    over_dep = copy.deepcopy(dep)
    over_dep["spec"]["minReadySeconds"] = 5
    over_dep["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "B", "value": "homing-system"})
    over_rules = copy.deepcopy(rules)
    over_rules["data"]["b"] = "2"
    over_svc = copy.deepcopy(svc)
    over_svc["spec"]["ports"].pop()
    example = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "homing-config", "namespace": "homing-system"},
               "data": {"config.yaml": ""}}
    return [ns, dep, rules, svc, legacy], [ns, over_dep, over_rules, over_svc, role], example


@pytest.mark.parametrize("mindcluster", [False, True])
def test_generator_renders_base_and_overlay_exactly(tmp_path: Path, mindcluster: bool) -> None:
    base, over, example = _synthetic_manifests()
    genchart.write(tmp_path / "chart", genchart.render_objects(base, over, example))
    rendered = ok(helm("template", "x", str(tmp_path / "chart"), "--set", f"mindcluster.enabled={str(mindcluster).lower()}"))
    assert by_key([d for d in yaml.safe_load_all(rendered) if d]) == by_key(over if mindcluster else base)


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
                "namespace": {"name": "npu-ops"},
                "image": {"repository": "registry.example/homing", "tag": "1.2.3", "pullPolicy": "Always"},
                "replicas": 3,
                "settings": SETTINGS,
            }
        )
    )
    objs = template("--values", str(values))
    text = yaml.safe_dump_all(objs)
    assert "homing-system" not in text
    assert {obj["metadata"].get("namespace") for obj in objs} <= {None, "npu-ops"}
    for binding in (obj for obj in objs if obj["kind"].endswith("RoleBinding")):
        assert {s["namespace"] for s in binding["subjects"]} == {"npu-ops"}
    (dep,) = (obj for obj in objs if obj["kind"] == "Deployment")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"], dep["spec"]["replicas"]) == ("registry.example/homing:1.2.3", "Always", 3)
    assert "checksum/settings" in dep["spec"]["template"]["metadata"]["annotations"]
    # The settings file is the operator's own format and loads into its model.
    (cm,) = (obj for obj in objs if obj["kind"] == "ConfigMap")
    loaded = Settings(**yaml.safe_load(cm["data"]["config.yaml"]))  # given values win over HOMING_* here
    assert (loaded.scope.namespace_label, loaded.lifetimes.ttl_seconds) == ("team.example/homing", 3600)
    assert loaded.topology.resource_level_config == SETTINGS["topology"]["resource_level_config"]
    # The webhook's selectors are those the operator writes from the same settings.
    from homing.kube.webhookconfig import configuration

    (hook,) = (obj for obj in objs if obj["kind"] == "MutatingWebhookConfiguration")
    wanted = configuration(loaded.model_copy(update={"webhook": loaded.webhook.model_copy(update={"service_namespace": "npu-ops"})}), None)
    assert hook["webhooks"] == wanted["webhooks"]


def test_defaults_ship_no_settings_config_map() -> None:
    assert not [obj for obj in template() if obj["kind"] == "ConfigMap"]


@pytest.mark.parametrize(
    "bad", ["settings.weights.home=heavy", "settings.no_such_section.x=1", "replicas=-1", "image.tagg=1"]
)
def test_schema_refuses_bad_values(bad: str) -> None:
    result = helm("template", "homing", str(CHART), "--set", bad)
    assert result.returncode != 0 and "schema" in result.stderr, result.stderr


# -- installed on the local control plane --------------------------------------------------

CHART_NAMESPACE = "homing-helm-e2e"
SCOPE_LABEL = "helm-e2e.homing.io/enabled"  # not the other tests' label: their pods are not this operator's


@pytest.fixture
def installed(kubeconfig: Path, tmp_path: Path) -> Any:
    if os.environ.get("HOMING_E2E_KUBECONFIG"):
        pytest.skip("installs cluster-wide objects named homing: only on the harness's own control plane")
    values = tmp_path / "values.yaml"
    scope = {"namespace_label": SCOPE_LABEL, "pod_label": SCOPE_LABEL}
    values.write_text(yaml.safe_dump({"namespace": {"name": CHART_NAMESPACE}, "settings": {"scope": scope}}))
    ok(helm("install", "homing-e2e", str(CHART), "--namespace", "default", "--values", str(values), kubeconfig=kubeconfig))
    yield
    ok(helm("uninstall", "homing-e2e", "--namespace", "default", kubeconfig=kubeconfig))


@pytest.mark.cluster
async def test_helm_install_gives_a_working_operator(kube: Kube, kubeconfig: Path, installed: None) -> None:
    """The installed objects run as the operator: its Deployment's container (environment,
    settings ConfigMap) as a process that calls the API server as the chart's
    ServiceAccount. It writes its CA into the chart's webhook configuration, and a pod in
    a namespace opted in by the chart's scope label is patched back to its rank's home."""
    release = json.loads(ok(helm("status", "homing-e2e", "--namespace", "default", "-o", "json", kubeconfig=kubeconfig)))
    assert release["info"]["status"] == "deployed"
    workdir = Path(tempfile.mkdtemp(prefix="homing-helm-op-"))
    proc = await deployment_process(kube, kubeconfig, CHART_NAMESPACE, "homing", workdir)
    proc.start()
    try:
        async def hook_with_ca() -> dict | None:  # written once this replica leads
            got = await kube.request("GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/homing")
            return got if all(w["clientConfig"].get("caBundle") for w in got["webhooks"]) else None

        hook = await o.eventually(hook_with_ca, what="the operator's CA in the chart's webhook configuration")
        assert hook["webhooks"][0]["namespaceSelector"] == {"matchLabels": {SCOPE_LABEL: "true"}}
        tls = await o.eventually(
            lambda: kube.request("GET", f"/api/v1/namespaces/{CHART_NAMESPACE}/secrets/homing-webhook-tls"), what="TLS Secret"
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
