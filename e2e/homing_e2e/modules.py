"""Where the Go module cache holds an upstream module the tests read files from (CRDs,
kwok's stages, scheduler configurations): never copied into the repository."""
from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

from homing_e2e.cluster import E2E_DIR


@cache
def module_dir(module: str, version: str) -> Path:
    """`go mod download` fetches the pinned module once; then it is local."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd="/",
                         capture_output=True, text=True, check=True).stdout
    return Path(json.loads(out)["Dir"])


@cache
def pinned_dir(module_folder: str, module: str) -> Path:
    """The module at the version e2e/<module_folder>/go.mod pins (the one its binaries were built from)."""
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", module], cwd=E2E_DIR / module_folder,
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)
