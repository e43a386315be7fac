"""Fixtures the bench scripts' tests share."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Checkout:
    """A git checkout of its own with an `operator/` folder, standing for another commit's
    worktree (HOMING_E2E_OPERATOR_PATH): `commit` records the folder as it is and returns
    the short commit operator_code reads."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.operator = root / "operator"
        self.operator.mkdir(parents=True)
        self.write("x = 1\n")
        self._git("init", "-q")

    def _git(self, *args: str) -> str:
        git = ["git", "-C", str(self.root), "-c", "user.name=t", "-c", "user.email=t@t"]
        return subprocess.run([*git, *args], capture_output=True, text=True, check=True).stdout.strip()

    def write(self, text: str) -> None:
        (self.operator / "mod.py").write_text(text)

    def commit(self) -> str:
        self._git("add", ".")
        self._git("commit", "-q", "-m", "a commit")
        return self._git("rev-parse", "--short=12", "HEAD")


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path / "checkout")


def load_bench_script(name: str) -> types.ModuleType:
    """bench/<name>.py as a module named bench_<name>: the scripts are not a package, and
    import their siblings from bench/ itself (mindcluster_scenarios imports tidal)."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # their dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bench_script() -> Callable[[str], types.ModuleType]:
    """load_bench_script, for the tests of each script."""
    return load_bench_script


@pytest.fixture(scope="session")
def tidal() -> types.ModuleType:
    return load_bench_script("tidal")
