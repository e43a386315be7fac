"""Volcano's CRDs, read from the Go module cache at run time (never copied into the
repo): `go mod download` fetches the pinned module once, then it is local."""
from __future__ import annotations

from pathlib import Path

import yaml

from homing_e2e import modules

VOLCANO_MODULE = "volcano.sh/volcano"
VOLCANO_VERSION = "v1.15.1"


def module_dir() -> Path:
    return modules.module_dir(VOLCANO_MODULE, VOLCANO_VERSION)


def crd(file_name: str) -> dict:
    """One CRD from config/crd/volcano/bases, e.g. scheduling.volcano.sh_podgroups.yaml."""
    return yaml.safe_load((module_dir() / "config" / "crd" / "volcano" / "bases" / file_name).read_text())


TOPOLOGY_CRDS = ("scheduling.volcano.sh_podgroups.yaml", "topology.volcano.sh_hypernodes.yaml")
