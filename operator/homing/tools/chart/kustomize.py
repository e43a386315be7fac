"""The objects a kustomization builds, by the real kustomize in kubectl."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def build(kubectl: str, directory: Path) -> list[dict[str, Any]]:
    out = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed:\n{out.stderr}")
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]
