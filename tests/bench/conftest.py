"""Fixtures the bench scripts' tests share."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


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
