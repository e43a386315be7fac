"""The `homing` command: `homing` alone (or `homing run`) runs the operator, as the
manifests start it; `homing explain ...` explains; `kubectl homing ...` is the same
command as a kubectl plugin (the `kubectl-homing` script)."""
from homing.cli.main import kubectl_plugin, main

__all__ = ["kubectl_plugin", "main"]
