"""The hand-written chart (charts/homing, docs/helm.md) rendered by `helm template`: lint-clean;
each example values file in charts/homing/examples rendered into its own release and
namespace, every object there, named from the release and labelled as the ecosystem's
charts are; every value landing where it says; every switch removing its objects; the
webhook configuration being what the operator writes from the settings its pod loads; and
the schema accepting what is documented and refusing what the operator would refuse."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from homing.cli import doctor
from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration
from homing_e2e.chart_objects import (
    CLUSTER_SCOPED,
    EXAMPLES,
    FOREIGN_NAMESPACES,
    by_key,
    cluster_name,
    container,
    example_values,
    fullname,
    one,
    pod_settings,
)
from homing_e2e.helm import CHART, build_helm, helm, ok, template

ROOT = Path(__file__).resolve().parents[2]
APP_VERSION = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text())


@pytest.fixture(scope="module", autouse=True)
def tools() -> None:
    build_helm()


def rendered(example: Path | None, release: str, namespace: str, *args: str) -> list[dict[str, Any]]:
    values = ["--values", str(example)] if example else []
    return template(*values, *args, release=release, namespace=namespace)


def values_of(example: Path | None) -> dict[str, Any]:
    """The example's values over the chart's defaults (Helm's merge: maps merge, the rest replaces)."""
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            return {k: merge(base.get(k), over[k]) if k in base else over[k] for k in over} | {
                k: v for k, v in base.items() if k not in over}
        return over
    return merge(DEFAULTS, example_values(example) if example else {})


CASES = [None, *EXAMPLES]
IDS = ["defaults", *(p.stem for p in EXAMPLES)]


@pytest.mark.parametrize("example", CASES, ids=IDS)
def test_helm_lint(example: Path | None) -> None:
    ok(helm("lint", "--strict", str(CHART), "--namespace", "lint-ns", *(["--values", str(example)] if example else [])))


@pytest.mark.parametrize("example", CASES, ids=IDS)
def test_every_object_is_the_release_s(example: Path | None) -> None:
    """In the release namespace (none made), named from the release, with the standard labels."""
    release, namespace = f"rel-{IDS[CASES.index(example)]}", f"ns-{IDS[CASES.index(example)]}"
    objs = rendered(example, release, namespace)
    assert not [o for o in objs if o["kind"] == "Namespace"], "the chart makes no namespace: --create-namespace does"
    for obj in objs:
        meta, kind = obj["metadata"], obj["kind"]
        if kind == "CustomResourceDefinition":
            continue
        what = f"{kind} {meta['name']}"
        if kind in CLUSTER_SCOPED:
            assert "namespace" not in meta, what
            assert meta["name"].startswith(cluster_name(release, namespace)), what
        elif meta["namespace"] in FOREIGN_NAMESPACES:
            assert kind in ("Role", "RoleBinding"), what
            assert meta["name"].startswith(cluster_name(release, namespace)), what
        else:
            assert meta["namespace"] == namespace, what
            assert meta["name"].startswith(fullname(release)), what
        labels = meta["labels"]
        assert labels["app.kubernetes.io/name"] == "homing", what
        assert labels["app.kubernetes.io/instance"] == release, what
        assert labels["app.kubernetes.io/managed-by"] == "Helm", what
        assert labels["app.kubernetes.io/version"] == (values_of(example)["image"]["tag"] or APP_VERSION), what
        assert labels["helm.sh/chart"] == f"homing-{APP_VERSION}", what


@pytest.mark.parametrize("example", CASES, ids=IDS)
def test_values_land_in_the_deployment(example: Path | None) -> None:
    values = values_of(example)
    objs = rendered(example, "homing", "homing-system")
    dep = one(objs, "Deployment")
    pod = dep["spec"]["template"]
    c = container(objs)
    image = values["image"]
    assert c["image"] == f"{image['repository']}:{image['tag'] or APP_VERSION}"
    assert c["imagePullPolicy"] == image["pullPolicy"]
    assert dep["spec"]["replicas"] == values["replicas"]
    assert c["resources"] == values["resources"]
    assert pod["spec"].get("nodeSelector", {}) == values["nodeSelector"]
    assert pod["spec"].get("tolerations", []) == values["tolerations"]
    assert pod["spec"].get("imagePullSecrets", []) == values["imagePullSecrets"]
    assert values["podAnnotations"].items() <= pod["metadata"]["annotations"].items()
    assert values["podLabels"].items() <= pod["metadata"]["labels"].items()
    assert not values["podLabels"].keys() & dep["spec"]["selector"]["matchLabels"].keys()
    if values["affinity"]:
        assert pod["spec"]["affinity"] == values["affinity"]
    else:
        term = pod["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert ("checksum/config" in pod["metadata"]["annotations"]) == bool(values["config"])


@pytest.mark.parametrize("example", CASES, ids=IDS)
def test_the_operator_writes_what_the_chart_installs(example: Path | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The settings the pod loads (environment and ConfigMap) make the operator write the very
    webhook configuration the chart installs (it rewrites it whenever it leads), name the
    objects the chart's RBAC grants, and mark deletion costs only with the policy installed."""
    values = values_of(example)
    release, namespace = "team-a", "ml-a"
    objs = rendered(example, release, namespace)
    settings = pod_settings(objs, monkeypatch, tmp_path)
    hook = one(objs, "MutatingWebhookConfiguration")
    wanted = configuration(settings, None)
    assert hook["metadata"]["name"] == settings.webhook.configuration_name == wanted["metadata"]["name"]
    assert hook["webhooks"] == wanted["webhooks"]
    assert {w["timeoutSeconds"] for w in hook["webhooks"]} == {values["webhook"]["timeoutSeconds"]}
    assert {w["failurePolicy"] for w in hook["webhooks"]} == {"Ignore"}
    service = hook["webhooks"][0]["clientConfig"]["service"]
    assert ("Service", namespace, service["name"]) in by_key(objs)
    assert (settings.webhook.service_name, settings.webhook.service_namespace) == (service["name"], namespace)
    role = by_key(objs)[("ClusterRole", "", cluster_name(release, namespace))]
    (hooks_rule,) = [r for r in role["rules"] if r["resources"] == ["mutatingwebhookconfigurations"]]
    assert hooks_rule["resourceNames"] == [settings.webhook.configuration_name]
    if values["certManager"]["enabled"]:  # cert-manager's certificate, mounted: no Secret of its own
        assert settings.webhook.mounted_tls_dir and settings.webhook.tls_secret is None
        assert ("Role", namespace, f"{fullname(release)}-tls") not in by_key(objs)
    else:
        tls = by_key(objs)[("Role", namespace, f"{fullname(release)}-tls")]
        assert tls["rules"][0]["resourceNames"] == [settings.webhook.tls_secret]
        assert settings.webhook.mounted_tls_dir is None
    assert settings.replicas.lease_name == f"{fullname(release)}-leader"
    assert settings.deletion_cost.enabled is values["deletionCost"]["enabled"]
    assert (settings.topology.device_info, settings.topology.noded) == (values["mindcluster"]["enabled"],) * 2
    patches_pods = any(r["resources"] == ["pods"] and r["verbs"] == ["patch"] for r in role["rules"])
    policies = {o["metadata"]["name"] for o in objs if o["kind"].startswith("ValidatingAdmissionPolicy")}
    guard = f"{cluster_name(release, namespace)}-pod-deletion-cost"
    assert patches_pods is (guard in policies) is values["deletionCost"]["enabled"]
    labels_on = values["imageLabels"]["enabled"]
    assert settings.preferences.image_labels is labels_on
    patches_nodes = any(r["resources"] == ["nodes"] and r["verbs"] == ["patch"] for r in role["rules"])
    node_guard = f"{cluster_name(release, namespace)}-node-labels"
    assert patches_nodes is (node_guard in policies) is (labels_on or values["mindcluster"]["enabled"])
    assert doctor.guard_name(settings) == guard, "`kubectl homing doctor` looks for this release's guard"


def test_doctor_finds_the_kustomize_install_s_guard() -> None:
    """manifests/base names the guard after its webhook configuration too."""
    names = {d["metadata"]["name"] for d in yaml.safe_load_all((ROOT / "manifests" / "base" / "pod-deletion-cost-policy.yaml").read_text())
             if d and d["kind"] == "ValidatingAdmissionPolicy"}
    assert names == {doctor.guard_name(Settings())}


@pytest.mark.parametrize("example", CASES, ids=IDS)
def test_the_policies_hold_this_release_s_service_account(example: Path | None) -> None:
    objs = rendered(example, "team-a", "ml-a")
    account = one(objs, "ServiceAccount")["metadata"]
    user = f"system:serviceaccount:ml-a:{account['name']}"
    for policy in (o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"):
        (condition,) = policy["spec"]["matchConditions"]
        assert condition["expression"] == f'request.userInfo.username == "{user}"'
    for binding in (o for o in objs if o["kind"].endswith("RoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": "ml-a"}]


def test_the_deletion_cost_guard_follows_the_scope() -> None:
    objs = rendered(EXAMPLES[[p.stem for p in EXAMPLES].index("production")], "homing", "homing-system")
    (policy,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"].endswith("-pod-deletion-cost")]
    scoped = [v["expression"] for v in policy["spec"]["validations"] if "namespaceObject" in v["expression"]]
    assert scoped and 'labels[?"team.example.com/homing"].orValue("") == "on"' in scoped[0]


def test_switches_remove_their_objects() -> None:
    kinds = lambda objs: {o["kind"] for o in objs}  # noqa: E731
    default = rendered(None, "homing", "homing-system")
    assert {"PriorityClass", "PodDisruptionBudget", "NetworkPolicy", "ValidatingAdmissionPolicy"} <= kinds(default)
    assert not {"ServiceMonitor", "PrometheusRule", "ConfigMap", "Issuer", "Certificate"} & kinds(default)
    minimal = rendered(CHART / "examples" / "minimal.yaml", "homing", "homing-system")
    assert not {"PriorityClass", "PodDisruptionBudget", "NetworkPolicy", "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding"} & kinds(minimal)
    assert "priorityClassName" not in one(minimal, "Deployment")["spec"]["template"]["spec"]
    assert {"name": "HOMING_DELETION_COST__ENABLED", "value": "false"} in container(minimal)["env"]
    monitored = rendered(None, "homing", "homing-system", "--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true",
                         "--set", "serviceMonitor.labels.release=prom")
    assert one(monitored, "ServiceMonitor")["metadata"]["labels"]["release"] == "prom"
    rules = one(monitored, "PrometheusRule")["spec"]
    assert rules == yaml.safe_load((ROOT / "manifests" / "monitoring" / "prometheusrule.yaml").read_text())["spec"]
    own = rendered(None, "homing", "homing-system", "--set", "priorityClassName=platform-critical")
    assert "PriorityClass" not in kinds(own)
    assert one(own, "Deployment")["spec"]["template"]["spec"]["priorityClassName"] == "platform-critical"
    mindcluster = rendered(None, "homing", "homing-system", "--set", "mindcluster.enabled=true")
    assert {o["metadata"].get("namespace") for o in mindcluster if o["kind"] == "Role"} == {"homing-system", *FOREIGN_NAMESPACES}
    assert not [o for o in default if o["metadata"].get("namespace") in FOREIGN_NAMESPACES]


def test_the_default_priority_class_is_the_chart_s_own() -> None:
    objs = rendered(None, "homing", "homing-system")
    pc = one(objs, "PriorityClass")
    assert (pc["preemptionPolicy"], pc["value"], pc["globalDefault"]) == ("Never", 1000000, False)
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["priorityClassName"] == pc["metadata"]["name"]


def test_the_network_policy_takes_cidrs_and_peers() -> None:
    plain = rendered(None, "homing", "homing-system", "--set", "networkPolicy.apiServer.cidrs={192.168.10.0/24,10.0.0.0/28}")
    webhook_rule = one(plain, "NetworkPolicy")["spec"]["ingress"][0]
    assert webhook_rule["from"] == [{"ipBlock": {"cidr": "192.168.10.0/24"}}, {"ipBlock": {"cidr": "10.0.0.0/28"}}]
    default = one(rendered(None, "homing", "homing-system"), "NetworkPolicy")["spec"]["ingress"][0]
    assert default["from"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.244.0.0/16"]}}]
    nowhere = helm("template", "homing", str(CHART), "--set", "networkPolicy.apiServer.cidrs=null")
    assert nowhere.returncode != 0 and "could never reach the webhook" in nowhere.stderr


def test_the_client_ca_is_mounted_and_named_to_the_operator(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    objs = rendered(None, "homing", "homing-system", "--set", "webhook.clientCA.configMap=apiserver-webhook-client-ca")
    settings = pod_settings(objs, monkeypatch, tmp_path)
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in container(objs)["volumeMounts"] if m["name"] == "client-ca"]
    assert settings.webhook.client_ca_file == f"{mount['mountPath']}/ca.crt" and mount["readOnly"]
    assert {"name": "client-ca", "configMap": {"name": "apiserver-webhook-client-ca"}} in pod["volumes"]
    off = rendered(None, "homing", "homing-system")
    assert pod_settings(off, monkeypatch, tmp_path).webhook.client_ca_file is None
    assert "client-ca" not in {v["name"] for v in one(off, "Deployment")["spec"]["template"]["spec"]["volumes"]}


def test_image_digest_and_tag() -> None:
    objs = rendered(None, "homing", "homing-system", "--set", "image.tag=1.2.3,image.digest=sha256:" + "a" * 64)
    assert container(objs)["image"] == "homing:1.2.3@sha256:" + "a" * 64


def test_two_releases_own_different_objects() -> None:
    """Two releases named alike in two namespaces, and two named apart in one: nothing shared
    but the CRD, which Helm installs once and never deletes."""
    for (r1, n1), (r2, n2) in [(("homing", "ml-a"), ("homing", "ml-b")), (("team-a", "ml"), ("team-b", "ml"))]:
        first, second = by_key(rendered(None, r1, n1)), by_key(rendered(None, r2, n2))
        assert {k[0] for k in first.keys() & second.keys()} == {"CustomResourceDefinition"}


def test_long_names_stay_dns_labels() -> None:
    objs = rendered(None, "a-release-name-long-enough-to-be-cut-somewhere", "a-namespace-name-long-enough-to-be-cut-too")
    for name in (obj["metadata"]["name"] for obj in objs):
        assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name), name


def test_cert_manager_mode_serves_cert_manager_s_certificate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The operator serves the Secret the Certificate issues (mounted where its settings say),
    makes no certificate of its own (no Secret rights), and cert-manager's injector writes the
    caBundle from that Certificate; without an issuerRef the chart's own CA issues it."""
    objs = rendered(None, "homing", "homing-system", "--set", "certManager.enabled=true")
    kinds = [o["kind"] for o in objs]
    assert (kinds.count("Issuer"), kinds.count("Certificate")) == (2, 2)
    (serving,) = [o for o in objs if o["kind"] == "Certificate" and not o["spec"].get("isCA")]
    (ca,) = [o for o in objs if o["kind"] == "Certificate" and o["spec"].get("isCA")]
    ca_issuer = by_key(objs)[("Issuer", "homing-system", serving["spec"]["issuerRef"]["name"])]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca["spec"]["secretName"]
    service = by_key(objs)[("Service", "homing-system", "homing-webhook")]["metadata"]["name"]
    assert serving["spec"]["dnsNames"] == [f"{service}.homing-system.svc", f"{service}.homing-system.svc.cluster.local"]
    hook = one(objs, "MutatingWebhookConfiguration")
    assert hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"homing-system/{serving['metadata']['name']}"
    settings = pod_settings(objs, monkeypatch, tmp_path)
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    (mount,) = [m for m in container(objs)["volumeMounts"] if m["mountPath"] == settings.webhook.mounted_tls_dir]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == serving["spec"]["secretName"]
    assert settings.webhook.tls_secret is None
    assert not [o for o in objs if o["kind"] == "Role" and any("secrets" in r["resources"] for r in o["rules"])]
    theirs = rendered(CHART / "examples" / "cert-manager.yaml", "homing", "homing-system")
    assert not [o for o in theirs if o["kind"] == "Issuer"]
    (serving,) = [o for o in theirs if o["kind"] == "Certificate"]
    assert serving["spec"]["issuerRef"] == {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    off = rendered(None, "homing", "homing-system")
    assert not {"Issuer", "Certificate"} & {o["kind"] for o in off}
    assert "annotations" not in one(off, "MutatingWebhookConfiguration")["metadata"]


# -- values.schema.json -----------------------------------------------------------------------

SCHEMA = json.loads((CHART / "values.schema.json").read_text())
# Settings the chart sets itself (from its own values, or fixed by the pod it makes).
CHART_OWNED = {
    "metrics_port", "health_port", "liveness_port",
    "webhook.port", "webhook.url", "webhook.service_name", "webhook.service_namespace", "webhook.configuration_name",
    "webhook.manage_configuration", "webhook.tls_dir", "webhook.tls_secret", "webhook.mounted_tls_dir", "webhook.timeout_seconds",
    "webhook.client_ca_file",
    "webhook.namespace_selector", "webhook.object_selector",
    "replicas.namespace", "replicas.lease_name", "replicas.member_prefix", "replicas.identity",
    "deletion_cost.enabled", "topology.device_info", "topology.noded", "preferences.image_labels",
}


def settings_keys() -> set[str]:
    keys = set()
    for name, field in Settings.model_fields.items():
        model = field.annotation
        if isinstance(model, type) and hasattr(model, "model_fields"):
            keys |= {f"{name}.{inner}" for inner in model.model_fields}
        else:
            keys.add(name)
    return keys


def schema_keys() -> set[str]:
    keys = set()
    for name, prop in SCHEMA["properties"]["config"]["properties"].items():
        if prop.get("type") == "object":
            keys |= {f"{name}.{inner}" for inner in prop["properties"]}
        else:
            keys.add(name)
    return keys


def test_the_schema_knows_every_setting_the_chart_does_not_set_itself() -> None:
    assert schema_keys() == settings_keys() - CHART_OWNED
    assert CHART_OWNED <= settings_keys()


def test_the_schema_accepts_the_example_settings_file() -> None:
    """manifests/examples/config.yaml lists the settings with their defaults: as config, less
    what the chart sets itself, it renders."""
    example = yaml.safe_load(yaml.safe_load((ROOT / "manifests" / "examples" / "config.yaml").read_text())["data"]["config.yaml"])
    for dotted in CHART_OWNED:
        section, _, name = dotted.partition(".")
        if name and isinstance(example.get(section), dict):
            example[section].pop(name, None)
        elif not name:
            example.pop(section, None)
    assert example
    ok(helm("template", "homing", str(CHART), "--set-json", f"config={json.dumps(example)}"))


@pytest.mark.parametrize(
    "bad",
    [
        "config.weights.home=0",  # the operator: every weight must be positive
        "config.weights.home=101",  # Kubernetes caps a term at 100
        "config.weights.claimed=301",
        "config.weights.domains={30,20,10,5}",  # at most three levels
        "config.weights.home=heavy",
        "config.bounds.max_ranks=0",
        "config.shard=Not_A_Name",
        "config.log_level=verbose",
        "config.no_such_section.x=1",
        "config.webhook.service_name=elsewhere",  # the chart's
        "config.metrics_port=9000",  # the chart's
        "config.deletion_cost.enabled=false",  # deletionCost.enabled
        "webhook.timeoutSeconds=31",
        "webhook.failurePolicy=Fail",  # always Ignore
        "replicas=-1",
        "image.tagg=1",
        "imagePullSecrets[0].nam=x",
        "nodeSelector.zone=1",  # label values are strings
        "networkPolicy.apiServer.cidrs[0].except={10.0.0.0/8}",  # an ipBlock needs its cidr
        "serviceMonitor.interval=often",
        "certManager.issuerRef.kind=Vault",
        "certManager.issuerRef.kind=ClusterIssuer",  # an issuerRef needs its name
    ],
)
def test_the_schema_refuses(bad: str) -> None:
    result = helm("template", "homing", str(CHART), "--set", bad)
    assert result.returncode != 0 and "schema" in result.stderr, result.stderr
