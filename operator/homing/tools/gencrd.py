"""Writes crds/placementmemory.yaml from the pydantic model: `python -m homing.tools.gencrd`."""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from homing.placementmemory import crd

HEADER = "# Generated from operator/homing/placementmemory/ by `make crds`. Do not edit.\n"


def render() -> str:
    return HEADER + yaml.safe_dump(crd(), sort_keys=False)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "crds/placementmemory.yaml")
    target.write_text(render())
    print(f"wrote {target}")
