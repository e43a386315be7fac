"""The helm CLI that e2e/build-helm.sh builds, run against charts/homing with its own
cache and config directories (never the user's), and what it renders as plain objects."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from homing_e2e.cluster import BIN_DIR, E2E_DIR

CHART = E2E_DIR.parent / "charts" / "homing"
_HOME = Path(tempfile.mkdtemp(prefix="homing-helm-"))


def build_helm() -> None:
    subprocess.run(["bash", str(E2E_DIR / "build-helm.sh")], check=True)


def helm(*args: str, kubeconfig: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update({f"HELM_{kind}_HOME": str(_HOME / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")})
    if kubeconfig:
        env["KUBECONFIG"] = str(kubeconfig)
    return subprocess.run([str(BIN_DIR / "helm"), *args], capture_output=True, text=True, timeout=timeout, env=env)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"helm {' '.join(result.args[1:])} failed:\n{result.stderr}{result.stdout}"
    return result.stdout


def template(*args: str, release: str = "homing", namespace: str = "homing-system") -> list[dict[str, Any]]:
    """Every object `helm template` renders (CRDs included) for `release` in `namespace`, as a
    kubectl apply would get them."""
    out = ok(helm("template", release, str(CHART), "--namespace", namespace, "--include-crds", *args))
    return [doc for doc in yaml.safe_load_all(out) if doc]
