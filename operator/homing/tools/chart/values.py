"""The chart's values.yaml, values.schema.json and Chart.yaml. Every default is read from the
manifests' objects, so a default install renders exactly what `kubectl apply -k` applies."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from homing.config import Settings
from homing.tools.chart.placeholders import dump
from homing.tools.chart.rules import pod_template

ROOT = Path(__file__).resolve().parents[4]
LICENSE = "Apache-2.0"  # SPDX, as pyproject.toml's `license`
HEADER = "# Generated from manifests/ by `make manifests` (homing.tools.genchart). Do not edit.\n"
VALUES_HEADER = HEADER + "# Defaults render the same objects as `kubectl apply -k manifests/`; docs/helm.md.\n"

VALUES_TEXT = """\
# The namespace every namespaced object goes in. The chart makes it (with its labels)
# unless create is false; then it must exist.
{namespace}
# The operator's image (build it from the Dockerfile and push it to your registry).
{image}
{replicas}
# MindCluster's topology and health sources (what `kubectl apply -k manifests/mindcluster`
# adds): reads mindx-dl-deviceinfo-<node> in kube-system and mindx-dl-nodeinfo-<node> in
# mindx-dl (both namespaces must exist), copies super-pod and rack IDs onto node labels.
{mindcluster}
# The operator's settings file (operator/homing/config.py; manifests/examples/config.yaml
# lists every key and its default), written to ConfigMap homing-config when not empty.
# The webhook's selectors follow scope. For example:
#   settings:
#     scope:
#       namespace_label: homing.io/enabled      # namespaces opted in by this label...
#       namespace_label_value: "true"
#       pod_label: homing.io/enabled            # ...and pods elsewhere that carry it
#       resource_prefixes: ["huawei.com/", "nvidia.com/"]
#     weights: {{home: 100, domains: [32, 26, 20]}}
#     topology:
#       resource_level_config: '{{"default": {{"level1": {{"label": "example.com/switch"}}}}}}'
settings: {{}}
"""


def image_parts(image: str) -> dict[str, str]:
    """repository[:tag][@digest], the tag's colon being after the last slash."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        return {"repository": name[:colon], "tag": name[colon + 1 :], "digest": digest}
    return {"repository": name, "tag": "", "digest": digest}


def defaults(objects: list[dict[str, Any]], namespace: str) -> dict[str, Any]:
    workloads = [(o, template) for o in objects if (template := pod_template(o)) is not None]
    if len(workloads) != 1:
        raise ValueError(f"expected one workload in manifests/, found {len(workloads)}: image and replicas are its values")
    ((workload, template),) = workloads
    (container, *_) = template["spec"]["containers"]
    return {
        "namespace": {"name": namespace, "create": True},
        "image": {**image_parts(container["image"]), "pullPolicy": container.get("imagePullPolicy", "IfNotPresent")},
        "replicas": workload["spec"].get("replicas", 1),
        "mindcluster": {"enabled": False},
        "settings": {},
    }


def values_yaml(values: dict[str, Any]) -> str:
    parts = {key: dump({key: values[key]}).rstrip("\n") for key in ("namespace", "image", "replicas", "mindcluster")}
    return VALUES_HEADER + VALUES_TEXT.format(**parts)


def schema() -> str:
    """Values are checked by helm before anything renders; settings with the operator's own
    model (pydantic's JSON schema of homing.config.Settings)."""
    settings = Settings.model_json_schema(ref_template="#/$defs/{model}")
    defs = settings.pop("$defs")
    defs["Settings"] = settings
    string = {"type": "string"}
    body = {
        "$defs": defs,
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "namespace": _object({"name": string, "create": {"type": "boolean"}}),
            "image": _object({"repository": string, "tag": string, "digest": string, "pullPolicy": string}),
            "replicas": {"type": "integer", "minimum": 0},
            "mindcluster": _object({"enabled": {"type": "boolean"}}),
            "settings": {"$ref": "#/$defs/Settings"},
            "global": {"type": "object"},  # what a parent chart passes to its subcharts
        },
    }
    return json.dumps(body, indent=2) + "\n"


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": sorted(properties), "properties": properties}


def release(root: Path = ROOT) -> str:
    """The release, pyproject.toml's version: the chart's version and appVersion (the image's tag)."""
    return str(tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"])


def chart_yaml(root: Path = ROOT) -> str:
    version = release(root)
    return HEADER + dump(
        {
            "apiVersion": "v2",
            "name": "homing",
            "description": "Sends rescheduled NPU/GPU pods back to the nodes they ran on.",
            "type": "application",
            "version": version,
            "appVersion": version,
            # Chart.yaml has no licence field; Artifact Hub reads this annotation. The chart
            # also carries the LICENSE file (genchart.render).
            "annotations": {"artifacthub.io/license": LICENSE},
        }
    )
