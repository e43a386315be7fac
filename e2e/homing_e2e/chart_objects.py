"""What the chart tests read from rendered objects: the chart's own names for a release,
and the operator's settings as its pod would load them."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from homing.config import Settings
from homing_e2e.helm import CHART

EXAMPLES = sorted((CHART / "examples").glob("*.yaml"))
CLUSTER_SCOPED = {
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "MutatingWebhookConfiguration", "PriorityClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
}
# Namespaces the chart puts Roles in besides the release's: MindCluster's sources live there.
FOREIGN_NAMESPACES = {"kube-system", "mindx-dl"}

Key = tuple[str, str, str]  # kind, namespace, name


def key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def by_key(objs: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    out = {key(obj): obj for obj in objs}
    assert len(out) == len(objs), "two objects with one name"
    return out


def fullname(release: str) -> str:
    return release if "homing" in release else f"{release}-homing"


def cluster_name(release: str, namespace: str) -> str:
    return f"{namespace}-{fullname(release)}"


def one(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [obj for obj in objs if obj["kind"] == kind]
    return found


def container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def pod_settings(objs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    """Settings() as the operator in the rendered Deployment loads them: its environment, and
    its settings file from the rendered ConfigMap."""
    for name in [n for n in os.environ if n.startswith("HOMING_")]:
        monkeypatch.delenv(name)
    configs = [obj for obj in objs if obj["kind"] == "ConfigMap"]
    for var in container(objs)["env"]:
        if "value" in var:
            monkeypatch.setenv(var["name"], var["value"])
    if configs:
        (cm,) = configs
        path = tmp_path / "config.yaml"
        path.write_text(cm["data"]["config.yaml"])
        monkeypatch.setenv("HOMING_CONFIG_FILE", str(path))
    else:
        monkeypatch.delenv("HOMING_CONFIG_FILE", raising=False)
    return Settings()


def example_values(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}
