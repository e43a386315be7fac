"""The harness's operator process names its leader Lease validly whatever its work
directory is called: tempfile.mkdtemp names may hold '_', and a Lease so named is refused
(HTTP 422), so the operator never led and never wrote its webhook configuration."""
from __future__ import annotations

import re
from pathlib import Path

from homing_e2e.operator_process import OperatorProcess

RFC1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def test_lease_name_is_a_valid_object_name(tmp_path: Path) -> None:
    for name in ("homing-op-ab_cd12", "Homing_Op_", "x" * 80 + "_"):
        proc = OperatorProcess(tmp_path / "admin.kubeconfig", tmp_path / name)
        lease = proc.env()["HOMING_REPLICAS__LEASE_NAME"]
        assert RFC1123_SUBDOMAIN.fullmatch(lease) and len(lease) <= 63, lease
