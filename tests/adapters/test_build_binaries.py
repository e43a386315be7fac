"""e2e/build-binaries.sh builds the programs named and no more (the demo's three on a new
machine), the rest when asked for all, and never leaves a program of older pins behind. A
stand-in `go` on PATH records what would be compiled, so this takes milliseconds."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "e2e" / "build-binaries.sh"
FAKE_GO = """#!/usr/bin/env bash
case "$1" in
  list) echo v1.35.4 ;;
  build) while [[ $# -gt 0 ]]; do [[ "$1" == -o ]] && out=$2; shift; done
         echo built > "$out"; chmod +x "$out"; echo "${out#$HOMING_BIN_DIR/}" >> "$GO_LOG" ;;
esac
"""
CONTROL_PLANE = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"]
RELEASE_137 = ["k8s-1.37/kube-apiserver", "k8s-1.37/kube-controller-manager", "k8s-1.37/kube-scheduler"]


def build(tmp_path: Path, *programs: str) -> list[str]:
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "go").write_text(FAKE_GO)
    (tools / "go").chmod(0o755)
    log = tmp_path / "go.log"
    log.write_text("")
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "HOMING_BIN_DIR": str(tmp_path / "bin"),
           "GO_LOG": str(log)}
    subprocess.run(["bash", str(SCRIPT), *programs], env=env, check=True, capture_output=True)
    return log.read_text().split()


def test_a_name_it_does_not_build_is_refused(tmp_path):
    with pytest.raises(subprocess.CalledProcessError) as err:
        build(tmp_path, "etcd", "kube-apiservr")
    assert err.value.returncode == 2 and b"no program kube-apiservr" in err.value.stderr


def test_the_named_programs_alone_then_the_rest_when_all_are_asked_for(tmp_path):
    assert build(tmp_path, "etcd", "kube-apiserver", "kube-controller-manager") == CONTROL_PLANE[:3]
    assert not (tmp_path / "bin" / "k8s-1.37").exists()
    assert build(tmp_path) == CONTROL_PLANE[3:] + RELEASE_137
    assert build(tmp_path) == [] and build(tmp_path, "etcd") == []  # built, nothing again


def test_new_pins_remove_every_program_of_the_old_ones(tmp_path):
    build(tmp_path)
    (tmp_path / "bin" / ".gomod.sha").write_text("older pins\n")
    assert build(tmp_path, "etcd") == ["etcd"]
    assert sorted(p.name for p in (tmp_path / "bin").iterdir() if p.is_file() and not p.name.startswith(".")) == ["etcd"]
    assert build(tmp_path) == CONTROL_PLANE[1:]  # the release's own programs kept their pins
