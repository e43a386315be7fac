"""The image is built from pinned inputs: every runtime dependency is locked
with hashes for the same versions pyproject.toml allows, the Dockerfile installs with
--require-hashes, and the base image is an exact release whose digest comes in as a
build argument (no digest is written that nobody here verified)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from requirements.lock."""
    pins: dict[str, tuple[str, list[str]]] = {}
    text = (ROOT / "requirements.lock").read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = re.match(r"([A-Za-z0-9_.-]+)==([^ \\\n]+)", block)
        if head:
            pins[canonicalize_name(head[1])] = (head[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return pins


def test_every_dependency_is_pinned_with_hashes_within_its_range():
    pins = locked()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [Requirement(r) for r in project["project"]["dependencies"]]
    wanted += [Requirement(r) for r in project["build-system"]["requires"]]
    for req in wanted:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock: run `make lock`"
        version, _ = pins[name]
        assert req.specifier.contains(version, prereleases=True), f"{req.name}=={version} outside {req.specifier}"
    assert all(hashes for _, hashes in pins.values()), "a pin without its hashes"


def test_dockerfile_installs_the_lock_with_hashes_on_an_exact_base():
    text = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes" in text and "requirements.lock" in text
    assert re.search(r"^ARG PYTHON_VERSION=\d+\.\d+\.\d+$", text, re.M), "the base is an exact Python release"
    assert "ARG BASE_DIGEST=\n" in text and "@${BASE_DIGEST}" in text
    assert "@sha256:" not in text  # a digest is passed at release time, never written unverified
    assert "--no-build-isolation" in text  # nothing unpinned is fetched to build homing itself
    assert len(re.findall(r"^FROM ", text, re.M)) == 2  # build stage, then a clean run stage
