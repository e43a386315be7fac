"""`kubectl homing doctor` against the live control plane and the running operator (issue 42):
healthy, it passes every check and exits 0; with the webhook's CA broken by hand while no
replica repairs it, or in a namespace that has not opted in, it fails and names the cause.
It reads the operator's settings from the cluster (here a settings ConfigMap in a namespace of
its own, naming the test operator's webhook configuration and Lease) and writes nothing."""
from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path

import pytest
import yaml

from homing.kube.client import JSON_PATCH, Kube
from homing_e2e import objects as o
from homing_e2e.kubectl import kubectl

pytestmark = pytest.mark.cluster

SCRIPTS = Path(sys.executable).parent
BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"
SHIPPED_VOLCANO = Path(__file__).resolve().parents[2] / "manifests" / "tidal" / "gangreclaim" / "volcano-scheduler.conf"
VOLCANO = "volcano-scheduler-configmap"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


async def doctor(kubeconfig: Path, namespace: str, operator_namespace: str, volcano: str = VOLCANO) -> tuple[int, dict]:
    """The checks by name; Volcano's configuration read from the ConfigMap `volcano` in the
    settings namespace (the fixture writes the shipped gang-aware one there)."""
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPTS / "kubectl-homing"), "doctor", "-n", namespace, "--operator-namespace", operator_namespace,
        "--volcano-config", f"{operator_namespace}/{volcano}",
        "-o", "json", "--kubeconfig", str(kubeconfig), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert out, err.decode()
    return proc.returncode, {c["name"]: c for c in json.loads(out)["checks"]}


@pytest.fixture
async def settings_namespace(kube: Kube, operator) -> str:
    """Where doctor reads the operator's settings: the test operator's names, as its Deployment would carry them."""
    ns = await o.namespace(kube, f"t-{o.short_id()}", opted_in=False)
    env = operator.env()
    config = {"webhook": {"configuration_name": env["HOMING_WEBHOOK__CONFIGURATION_NAME"]},
              "replicas": {"namespace": env["HOMING_REPLICAS__NAMESPACE"], "lease_name": env["HOMING_REPLICAS__LEASE_NAME"],
                           **{k: float(env[f"HOMING_REPLICAS__{k.upper()}"]) for k in ("lease_seconds", "renew_seconds", "retry_seconds")}}}
    await kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                       body={"metadata": {"name": "homing-config"}, "data": {"config.yaml": yaml.safe_dump(config)}})
    await volcano_config(kube, ns, VOLCANO, SHIPPED_VOLCANO.read_text())
    return ns


async def volcano_config(kube: Kube, ns: str, name: str, conf: str) -> None:
    await kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                       body={"metadata": {"name": name}, "data": {"volcano-scheduler.conf": conf}})


@pytest.fixture
def guard_applied(kubeconfig: Path, tmp_path: Path, operator):
    """The base's policy and binding, named after the test operator's webhook configuration as
    an install names them (doctor.guard_name)."""
    name = operator.env()["HOMING_WEBHOOK__CONFIGURATION_NAME"] + "-pod-deletion-cost"
    docs = [d for d in yaml.safe_load_all((BASE / "pod-deletion-cost-policy.yaml").read_text()) if d]
    for d in docs:
        d["metadata"]["name"] = name
        if d["kind"] == "ValidatingAdmissionPolicyBinding":
            d["spec"]["policyName"] = name
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump_all(docs))
    assert kubectl(kubeconfig, "apply", "-f", str(policy)).returncode == 0
    yield
    kubectl(kubeconfig, "delete", "-f", str(policy), "--ignore-not-found", "--wait=false")


async def test_doctor_passes_on_a_working_install(kube, operator, ns, kubeconfig, settings_namespace, guard_applied):
    code, checks = await doctor(kubeconfig, ns, settings_namespace)
    assert code == 0, json.dumps(checks, indent=1)
    assert all(c["ok"] for c in checks.values()), checks
    assert "homing.io/decision" not in json.dumps(await kube.request("GET", f"/api/v1/namespaces/{ns}/pods")), "nothing created"


async def test_doctor_names_a_namespace_out_of_scope(kube, operator, kubeconfig, settings_namespace, guard_applied):
    code, checks = await doctor(kubeconfig, settings_namespace, settings_namespace)  # not labelled homing.io/enabled
    assert code == 1 and checks["admission"]["ok"] is False
    assert "homing.io/enabled=true" in checks["admission"]["fix"]


async def test_doctor_fails_naming_the_cause_when_the_ca_is_broken_by_hand(kube, operator, ns, kubeconfig, settings_namespace):
    name = operator.env()["HOMING_WEBHOOK__CONFIGURATION_NAME"]
    operator.stop(kill=True)  # nobody repairs it meanwhile (a running leader would within its check interval)
    try:
        config = await kube.request("GET", f"{WEBHOOKS}/{name}")
        broken = base64.b64encode(b"not a certificate").decode()
        await kube.request("PATCH", f"{WEBHOOKS}/{name}", content_type=JSON_PATCH, body=[
            {"op": "replace", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": broken}
            for i in range(len(config["webhooks"]))])
        code, checks = await doctor(kubeconfig, ns, settings_namespace)
        assert code == 1
        assert checks["admission"]["ok"] is False and "caBundle" in checks["admission"]["fix"], checks["admission"]

        async def writer_stale() -> bool:  # past twice the Lease's 3 s without a renewal
            return (await doctor(kubeconfig, ns, settings_namespace))[1]["writer"]["ok"] is False

        await o.eventually(writer_stale, timeout=20, what="the stopped leader's Lease reported stale")
    finally:
        operator.start()  # the new leader repairs the caBundle

    async def repaired() -> bool:
        return (await doctor(kubeconfig, ns, settings_namespace))[1]["admission"]["ok"] is True

    await o.eventually(repaired, timeout=30, what="homing working again after its restart")


async def test_doctor_reads_volcanos_configuration(kube, operator, ns, kubeconfig, settings_namespace, guard_applied):
    """MindCluster's configuration as it ships (prefer-previous-node on, Volcano's nodeorder
    weight) warns and names both settings, without failing; a configuration without nodeorder
    fails: homing's terms would change no placement; none at the given place is not checked."""
    shipped = {"actions": "enqueue, allocate, backfill",
               "tiers": [{"plugins": [{"name": "gang"}, {"name": "volcano-npu_v26.1.0"}]},
                         {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}],
               "configurations": [{"name": "init-params", "arguments": {"prefer-previous-node": "true"}}]}
    await volcano_config(kube, settings_namespace, "mindcluster", yaml.safe_dump(shipped))
    code, checks = await doctor(kubeconfig, ns, settings_namespace, volcano="mindcluster")
    assert code == 0 and checks["scheduler"]["ok"] is True and checks["scheduler"]["warn"] is True, checks["scheduler"]
    assert '"prefer-previous-node": "false"' in checks["scheduler"]["fix"] and "nodeaffinity.weight to 10" in checks["scheduler"]["fix"]

    shipped["tiers"][1]["plugins"].pop()
    await volcano_config(kube, settings_namespace, "no-nodeorder", yaml.safe_dump(shipped))
    code, checks = await doctor(kubeconfig, ns, settings_namespace, volcano="no-nodeorder")
    assert code == 1 and checks["scheduler"]["ok"] is False and "no nodeorder plugin" in checks["scheduler"]["detail"]

    code, checks = await doctor(kubeconfig, ns, settings_namespace, volcano="absent")
    assert code == 0 and checks["scheduler"]["ok"] is None, checks["scheduler"]
