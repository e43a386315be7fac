"""`kubectl homing doctor -n NAMESPACE`: is homing working on this cluster, and if not, what to
fix. Each check asks the cluster the way a user can, with the user's rights; nothing is
written (the pod is created with dryRun=All, which homing's webhook decides on and forgets).

1. the webhook configuration exists and every entry carries a caBundle;
2. a dry-run accelerator pod in NAMESPACE comes back with homing's decision: the API server
   reached the webhook over TLS (a wrong CA, a NetworkPolicy or a stopped operator fail open
   and show here), and the namespace is in homing's scope;
3. the pod-patch guard (the ValidatingAdmissionPolicy and its binding) is installed, or the API
   server has no such policies and the deletion-cost marks are off;
4. a replica holds the writer Lease and renews it;
5. Volcano's scheduler configuration lets homing's terms count (cli/volcano_conf.py: nodeorder
   scores node affinity at homing's weight; MindCluster's prefer-previous-node, on, warns).
A check that cannot be made (no right to read the object) says so and does not fail; a warning
says what to change and does not fail either."""
from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

from homing.cli import volcano_conf
from homing.config import Settings
from homing.engine.identity.scope import DECISION_ANNOTATION
from homing.kube.client import Kube, KubeError
from homing.kube.leader.patch_guard import policies_served

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
NO_RIGHT = (401, 403)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool | None  # None: could not be checked (no right, not applicable)
    detail: str
    fix: str = ""
    warn: bool = False  # passes, but a setting keeps homing from doing all it can


@dataclass(slots=True)
class Report:
    namespace: str
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(c.ok is not False for c in self.checks)


def _unknown(name: str, err: KubeError, what: str) -> Check:
    if err.status in NO_RIGHT:
        return Check(name, None, f"no right to read {what}: not checked")
    return Check(name, False, f"reading {what} failed: HTTP {err.status}", "retry; see the API server's answer")


async def webhook_configuration(kube: Kube, settings: Settings) -> Check:
    name = settings.webhook.configuration_name
    try:
        config = await kube.request("GET", f"{WEBHOOKS}/{quote(name)}")
    except KubeError as err:
        if err.status == 404:
            return Check("webhook configuration", False, f"MutatingWebhookConfiguration {name} is missing",
                         "re-apply the install (kubectl apply -k manifests/, or helm upgrade)")
        return _unknown("webhook configuration", err, f"MutatingWebhookConfiguration {name}")
    bare = [w.get("name") for w in config.get("webhooks") or () if not (w.get("clientConfig") or {}).get("caBundle")]
    if bare:
        return Check("webhook configuration", False, f"entries without a caBundle: {', '.join(map(str, bare))}",
                     "homing's leader writes it within a minute: is a replica leading (below)? "
                     "With cert-manager, check the inject-ca-from annotation")
    return Check("webhook configuration", True, f"{name}: {len(config.get('webhooks') or ())} entries with a caBundle")


def probe_pod(settings: Settings) -> dict[str, object]:
    resource = f"{settings.scope.resource_prefixes[-1].rstrip('/')}/gpu" if settings.scope.resource_prefixes else "nvidia.com/gpu"
    # A rank of a StatefulSet that does not exist: homing decides only for pods with an owner,
    # and a dry run neither checks the owner nor leaves anything in homing's memory.
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "homing-doctor", "uid": str(uuid.uuid4()),
             "controller": True}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "homing-doctor-0", "labels": {"app.kubernetes.io/name": "homing-doctor"},
                     "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "probe", "image": "homing-doctor-probe",
                                 "resources": {"limits": {resource: "1"}, "requests": {resource: "1"}}}]},
    }


async def decision(kube: Kube, settings: Settings, namespace: str) -> Check:
    try:
        created = await kube.request("POST", f"/api/v1/namespaces/{quote(namespace)}/pods", body=probe_pod(settings),
                                     query=[("dryRun", "All")])
    except KubeError as err:
        if err.status in NO_RIGHT:
            return Check("admission", None, f"no right to create pods in {namespace} (even as a dry run): not checked")
        return Check("admission", False, f"the dry-run pod was refused: HTTP {err.status}",
                     "homing never refuses a pod: another admission controller did (a quota, a policy); "
                     "try a namespace where a pod requesting one accelerator is allowed")
    annotations = (created.get("metadata") or {}).get("annotations") or {}
    if DECISION_ANNOTATION in annotations:
        return Check("admission", True, f"a dry-run pod in {namespace} got homing's decision: {annotations[DECISION_ANNOTATION]}")
    scope = settings.scope
    return Check("admission", False, f"a dry-run pod in {namespace} came back without homing's decision",
                 f"is {namespace} labelled {scope.namespace_label}={scope.namespace_label_value}? If it is, the API server "
                 "could not call the webhook and ignored it: check the caBundle, the NetworkPolicy's API-server "
                 "CIDRs, the Service and that homing's pods are ready")


def guard_name(settings: Settings) -> str:
    """The pod-patch guard's name: the webhook configuration's with `-pod-deletion-cost`, as the
    install names both (manifests/base: homing; a Helm release: <namespace>-<fullname>)."""
    return f"{settings.webhook.configuration_name}-pod-deletion-cost"


async def guard(kube: Kube, settings: Settings) -> Check:
    name = guard_name(settings)
    served = await policies_served(kube)
    if served is None:
        return Check("pod-patch guard", None, "could not ask the API server which policies it serves")
    if not served:
        return Check("pod-patch guard", True, "this API server has no ValidatingAdmissionPolicy (before 1.30): "
                                              "deletion-cost marks are off, nothing to guard")
    missing = []
    for path, kind in ((POLICIES, "ValidatingAdmissionPolicy"), (BINDINGS, "ValidatingAdmissionPolicyBinding")):
        try:
            await kube.request("GET", f"{path}/{quote(name)}")
        except KubeError as err:
            if err.status != 404:
                return _unknown("pod-patch guard", err, f"{kind} {name}")
            missing.append(kind)
    if missing:
        return Check("pod-patch guard", False,
                     f"{' and '.join(missing)} {name} missing: homing's pod patches are held by RBAC alone",
                     "re-apply the install's policy (manifests/base/pod-deletion-cost-policy.yaml; Helm: deletionCost.enabled=true)")
    return Check("pod-patch guard", True, f"{name} and its binding installed")


async def writer(kube: Kube, settings: Settings, now: datetime.datetime) -> Check:
    r = settings.replicas
    namespace = r.namespace or settings.webhook.service_namespace
    try:
        lease = await kube.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace)}/leases/{quote(r.lease_name)}")
    except KubeError as err:
        if err.status == 404:
            return Check("writer", False, f"no Lease {namespace}/{r.lease_name}: no replica has led",
                         f"kubectl -n {namespace} get pods; see their logs")
        return _unknown("writer", err, f"Lease {namespace}/{r.lease_name}")
    spec = lease.get("spec") or {}
    holder, renewed = spec.get("holderIdentity"), spec.get("renewTime")
    if not holder or not renewed:
        return Check("writer", False, "the writer Lease is free: no replica leads", f"kubectl -n {namespace} get pods")
    age = (now - datetime.datetime.fromisoformat(renewed.replace("Z", "+00:00"))).total_seconds()
    if age > 2 * r.lease_seconds:
        return Check("writer", False, f"{holder} last renewed the writer Lease {age:.0f} s ago",
                     f"the leader is stuck or gone: kubectl -n {namespace} logs {holder.split('_')[0]}")
    return Check("writer", True, f"{holder} leads (renewed {age:.0f} s ago)")


async def scheduler(kube: Kube, location: str) -> Check:
    """Volcano's scheduler configuration, read from its ConfigMap (NAMESPACE/NAME)."""
    namespace, _, name = location.partition("/")
    if not namespace or not name:
        return Check("scheduler", None, f"--volcano-config {location!r} is not NAMESPACE/NAME: not checked")
    try:
        config = await kube.request("GET", f"/api/v1/namespaces/{quote(namespace)}/configmaps/{quote(name)}")
    except KubeError as err:
        if err.status == 404:
            return Check("scheduler", None, f"no Volcano scheduler configuration at {location}: not checked "
                                            "(kube-scheduler's is a file; a Volcano installed under another name: "
                                            "--volcano-config NAMESPACE/NAME)")
        return _unknown("scheduler", err, f"ConfigMap {location}")
    conf = volcano_conf.conf_text(config.get("data") or {})
    if conf is None:
        return Check("scheduler", None, f"ConfigMap {location} holds no *.conf key: not checked")
    found = volcano_conf.read(conf)
    detail = f"{location}: " + "; ".join(f.detail for f in found.items)
    fix = "; ".join(f.fix for f in found.items if f.level != "ok" and f.fix)
    return Check("scheduler", found.level != "fail", detail, fix, warn=found.level == "warn")


async def run(kube: Kube, namespace: str, settings: Settings, volcano_config: str,
              now: datetime.datetime | None = None) -> Report:
    now = now or datetime.datetime.now(datetime.UTC)
    report = Report(namespace)
    report.checks.append(await webhook_configuration(kube, settings))
    report.checks.append(await decision(kube, settings, namespace))
    report.checks.append(await guard(kube, settings))
    report.checks.append(await writer(kube, settings, now))
    report.checks.append(await scheduler(kube, volcano_config))
    return report


def text(report: Report) -> str:
    def mark(c: Check) -> str:
        return "warn" if c.warn else {True: "ok  ", False: "FAIL", None: "skip"}[c.ok]

    lines = [f"{mark(c)} {c.name}: {c.detail}" + (f"\n     fix: {c.fix}" if c.fix and (c.ok is False or c.warn) else "")
             for c in report.checks]
    lines.append("homing is working" if report.healthy else "homing needs attention (see FAIL above)")
    return "\n".join(lines)
