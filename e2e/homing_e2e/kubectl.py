"""kubectl, built with the control plane, against a kubeconfig: what a user types."""
from __future__ import annotations

import subprocess
from pathlib import Path

from homing_e2e.cluster import BIN_DIR


def kubectl(kubeconfig: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN_DIR / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, timeout=timeout)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """Its output; a failure fails the test with what kubectl said."""
    assert result.returncode == 0, f"kubectl {result.args[2:]} failed:\n{result.stderr}{result.stdout}"
    return result.stdout
