"""Where chart values go in the manifests' objects. Each rule finds its field by what the
field is (a workload's containers, the operator's settings file), not by a list of
object names, so objects added to manifests/ later are templated alike."""
from __future__ import annotations

import copy
from typing import Any

from homing.config import Scope, Settings, Webhook
from homing.kube.webhookconfig import configuration
from homing.tools.chart.placeholders import Placeholders

# A workload kind's path to its pod template.
POD_TEMPLATES = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
}

IMAGE = "{{ .Values.image.repository }}{{ with .Values.image.tag }}:{{ . }}{{ end }}{{ with .Values.image.digest }}@{{ . }}{{ end }}"
SETTINGS_CHECKSUM = "checksum/settings: {{ toYaml . | sha256sum }}"


def _dig(section: str, key: str, default: Any, pipe: str = "") -> str:
    """A setting from .Values.settings (the operator's own file format), else its default."""
    return f"{{{{ dig {section!r} {key!r} {default!r} .Values.settings{pipe} }}}}".replace("'", '"')


def pod_template(obj: dict[str, Any]) -> dict[str, Any] | None:
    path = POD_TEMPLATES.get(obj.get("kind", ""))
    node: Any = obj
    for key in path or ():
        node = node.get(key) if isinstance(node, dict) else None
    return node if path and isinstance(node, dict) else None


def mounts_config(template: dict[str, Any], config_map: str) -> bool:
    volumes = (template.get("spec") or {}).get("volumes") or []
    return any((v.get("configMap") or {}).get("name") == config_map for v in volumes)


def template_workload(obj: dict[str, Any], marks: Placeholders, config_map: str) -> None:
    """Image and pull policy of every container, the replica count, and a checksum of the
    settings in the pod template, so that `helm upgrade` with new settings restarts it."""
    template = pod_template(obj)
    if template is None:
        return
    if "replicas" in obj["spec"]:
        obj["spec"]["replicas"] = marks.inline("{{ .Values.replicas }}")
    for container in (template.get("spec") or {}).get("containers") or []:
        container["image"] = marks.inline(IMAGE)
        if "imagePullPolicy" in container:
            container["imagePullPolicy"] = marks.inline("{{ .Values.image.pullPolicy }}")
    if not mounts_config(template, config_map):
        return
    meta = template.setdefault("metadata", {})
    with_settings = "{{- with .Values.settings }}"
    if "annotations" in meta:
        meta["annotations"][marks.block(with_settings, SETTINGS_CHECKSUM)] = None
    else:
        meta[marks.block(with_settings, "annotations:\n  " + SETTINGS_CHECKSUM)] = None


def _scope_placeholders(marks: Placeholders) -> Settings:
    """Settings whose scope fields and webhook timeout are placeholders for the chart's values."""
    defaults = Scope()
    placeholders: dict[str, Any] = {  # strings where the model has other types: the chart's text
        name: marks.inline(_dig("scope", name, getattr(defaults, name), " | quote" if name.endswith("value") else ""))
        for name in ("namespace_label", "namespace_label_value", "pod_label")
    }
    scope = Scope.model_construct(**placeholders)
    webhook = Webhook.model_construct(
        **{**Webhook().model_dump(), "timeout_seconds": marks.inline(_dig("webhook", "timeout_seconds", Webhook().timeout_seconds))}
    )
    return Settings.model_construct(scope=scope, webhook=webhook)


def template_webhook(obj: dict[str, Any], marks: Placeholders) -> None:
    """The webhook configuration's selectors follow settings.scope, as the operator's own
    (homing.kube.webhookconfig) do. Its entries must be what that code writes from the
    default settings; anything else stops the generator rather than be silently lost."""
    if obj.get("kind") != "MutatingWebhookConfiguration" or obj["metadata"]["name"] != Webhook().configuration_name:
        return
    default = configuration(Settings.model_construct(), None)
    if obj.get("webhooks") != default["webhooks"]:
        raise ValueError(
            "manifests' MutatingWebhookConfiguration differs from homing.kube.webhookconfig's: run `make manifests`"
        )
    obj["webhooks"] = copy.deepcopy(configuration(_scope_placeholders(marks), None)["webhooks"])
