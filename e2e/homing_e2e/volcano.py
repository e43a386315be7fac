"""Volcano's CRDs, read from the Go module cache at run time (never copied into the
repo): `go mod download` fetches the pinned module once, then it is local."""
from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

import yaml

VOLCANO_MODULE = "volcano.sh/volcano"
VOLCANO_VERSION = "v1.15.1"


@cache
def module_dir() -> Path:
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{VOLCANO_MODULE}@{VOLCANO_VERSION}"],
        capture_output=True, text=True, check=True,
    ).stdout
    return Path(json.loads(out)["Dir"])


def crd(file_name: str) -> dict:
    """One CRD from config/crd/volcano/bases, e.g. scheduling.volcano.sh_podgroups.yaml."""
    return yaml.safe_load((module_dir() / "config" / "crd" / "volcano" / "bases" / file_name).read_text())


TOPOLOGY_CRDS = ("scheduling.volcano.sh_podgroups.yaml", "topology.volcano.sh_hypernodes.yaml")
