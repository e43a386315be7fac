"""The MutatingWebhookConfiguration: two entries on one path, one for opted-in
namespaces, one for opted-in pods elsewhere, so no pod is sent twice."""
from __future__ import annotations

import base64
from typing import Any

from homing.config import Settings
from homing.kube.client import JSON_PATCH, Kube, KubeError
from homing.kube.signals import logs

log = logs.get("homing.webhook")

WEBHOOK_PATH = "/homing-pods"
API_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def configuration(settings: Settings, ca_pem: bytes | None) -> dict[str, Any]:
    w, s = settings.webhook, settings.scope
    client: dict[str, Any]
    if w.url:
        client = {"url": w.url.rstrip("/") + WEBHOOK_PATH}
    else:
        client = {"service": {"name": w.service_name, "namespace": w.service_namespace, "path": WEBHOOK_PATH, "port": 443}}
    if ca_pem:
        client["caBundle"] = base64.b64encode(ca_pem).decode()
    opted_out = {"key": s.pod_label, "operator": "NotIn", "values": ["false"]}

    def entry(name: str, namespaces: dict[str, Any], objects: dict[str, Any]) -> dict[str, Any]:
        namespaces, objects = narrowed(namespaces, w.namespace_selector), narrowed(objects, w.object_selector)
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "NoneOnDryRun",  # promises are kept in memory, never on dry runs
            "failurePolicy": "Ignore",
            "timeoutSeconds": w.timeout_seconds,
            "reinvocationPolicy": "Never",
            "matchPolicy": "Equivalent",
            "rules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"], "scope": "Namespaced"}
            ],
            "namespaceSelector": namespaces,
            "objectSelector": objects,
            "clientConfig": dict(client),
        }

    webhooks = [
        entry(
            "namespaces.pods.homing.io",
            {"matchLabels": {s.namespace_label: s.namespace_label_value}},
            {"matchExpressions": [opted_out]},
        ),
    ]
    if s.pod_opt_in:  # a shard has none: another shard's namespaces would match it too
        webhooks.append(entry(
            "labelled.pods.homing.io",
            {"matchExpressions": [{"key": s.namespace_label, "operator": "NotIn", "values": [s.namespace_label_value]}]},
            {"matchLabels": {s.pod_label: "true"}},
        ))
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": w.configuration_name, "labels": {"app.kubernetes.io/name": "homing"}},
        "webhooks": webhooks,
    }


def narrowed(selector: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Both label selectors at once: their matchLabels and matchExpressions together (a label
    both name keeps the scope's value, so the extra one never widens the scope)."""
    if not extra:
        return selector
    out = dict(selector)
    labels = {**(extra.get("matchLabels") or {}), **(selector.get("matchLabels") or {})}
    expressions = [*(selector.get("matchExpressions") or []), *(extra.get("matchExpressions") or [])]
    if labels:
        out["matchLabels"] = labels
    if expressions:
        out["matchExpressions"] = expressions
    return out


FIELD_MANAGER = "homing"  # the manager homing's writes are recorded under (managedFields)


def repairs(current: dict[str, Any], wanted: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch operations that bring homing's own fields of the installed configuration to
    what homing wants (a caBundle edited by hand, an entry deleted), guarded by the version
    they were computed from; none when nothing drifted. Only the fields homing sets are
    compared and replaced, each whole: what an admin added (matchConditions, labels,
    annotations, another entry) stays. Not server-side apply: it merges `clientConfig`, so a
    `service` another manager set would stay beside homing's `url` (or the reverse), which
    the API server refuses."""
    have = {e.get("name"): i for i, e in enumerate(current.get("webhooks") or ())}
    ops: list[dict[str, Any]] = []
    for entry in wanted["webhooks"]:
        at = have.get(entry["name"])
        if at is None:
            ops.append({"op": "add", "path": "/webhooks/-", "value": entry})
            continue
        got = current["webhooks"][at]
        client = entry["clientConfig"]
        if "caBundle" not in client and "caBundle" in (got.get("clientConfig") or {}):
            # a bundle homing does not set (cert-manager's cainjector writes it) is not homing's field
            entry = {**entry, "clientConfig": {**client, "caBundle": got["clientConfig"]["caBundle"]}}
        ops += [{"op": "add" if key not in got else "replace", "path": f"/webhooks/{at}/{key}", "value": value}
                for key, value in entry.items() if got.get(key) != value]
    if not ops:
        return []
    version = current["metadata"]["resourceVersion"]
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": version}, *ops]


async def ensure(kube: Kube, settings: Settings, ca_pem: bytes | None) -> bool:
    """Compare the installed configuration with what homing wants and repair it (behaviour.md
    "Operation"): level-triggered, so a failed write, a push by a replica that lost the lead,
    or a hand edit is put right at the next check; only homing's own fields are written
    (`repairs`). Create when missing; False when it is missing and may not be created
    (in-cluster RBAC grants no create): pods are then admitted unchanged, which is safe, and
    the log says how to fix it."""
    # mounted certificates: the caBundle is injected by whoever issued them, never by homing
    wanted = configuration(settings, None if settings.webhook.mounted_tls_dir else ca_pem)
    name = settings.webhook.configuration_name
    try:
        current = await kube.request("GET", f"{API_PATH}/{name}")
    except KubeError as err:
        if err.status != 404:
            raise
        try:
            await kube.request("POST", API_PATH, body=wanted, query=[("fieldManager", FIELD_MANAGER)])
        except KubeError as denied:
            if denied.status != 403:
                raise
            log.error("webhook configuration missing and not creatable; re-apply manifests/webhook.yaml", name=name)
            return False
        return True
    ops = repairs(current, wanted)
    if not ops:
        return True
    await kube.request("PATCH", f"{API_PATH}/{name}", body=ops, content_type=JSON_PATCH,
                       query=[("fieldManager", FIELD_MANAGER)])
    log.info("webhook configuration brought up to date", name=name, fields=[op["path"] for op in ops[1:21]])
    return True
