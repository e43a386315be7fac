"""In a real pod the kubelet adds an environment variable per Service of the namespace
(`<NAME>_PORT=tcp://…` and more) unless the pod turns service links off. homing reads
every `HOMING_*` variable as a setting, so the Service `homing-metrics` became
`HOMING_METRICS_PORT=tcp://…`, was refused as `metrics_port`, and the operator
crash-looped on every real install (found on kind). The shipped pod must start with the
environment the kubelet gives it."""
from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
import yaml

from homing.config import Settings

BASE = Path(__file__).resolve().parents[2] / "manifests" / "base"


def objects() -> list[dict]:
    return [d for f in sorted(BASE.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]


def service_link_env(service: dict) -> dict[str, str]:
    """The variables the kubelet derives from one Service (docker-link style)."""
    name = service["metadata"]["name"].upper().replace("-", "_")
    ip, out = "10.0.0.10", {}
    ports = service["spec"].get("ports") or []
    out[f"{name}_SERVICE_HOST"] = ip
    if ports:
        first = ports[0]
        out[f"{name}_SERVICE_PORT"] = str(first["port"])
        out[f"{name}_PORT"] = f"tcp://{ip}:{first['port']}"
    for p in ports:
        proto = (p.get("protocol") or "TCP").upper()
        prefix = f"{name}_PORT_{p['port']}_{proto}"
        out.update({prefix: f"{proto.lower()}://{ip}:{p['port']}", f"{prefix}_PROTO": proto.lower(),
                    f"{prefix}_PORT": str(p["port"]), f"{prefix}_ADDR": ip})
    return out


def test_the_operator_starts_with_the_environment_its_pod_gets(monkeypatch: pytest.MonkeyPatch):
    docs = objects()
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    env: dict[str, str] = {}
    if pod.get("enableServiceLinks", True):
        for service in (d for d in docs if d["kind"] == "Service"):
            env.update(service_link_env(service))
    (container,) = [c for c in pod["containers"] if c["name"] == "homing"] or pod["containers"][:1]
    env.update({e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    Settings()  # raises on a variable it cannot read


def test_the_check_would_see_a_service_link():
    """The kubelet's variables for homing-metrics are ones the settings refuse: without
    service links off, the test above fails."""
    (metrics,) = [d for d in objects() if d["kind"] == "Service" and d["metadata"]["name"] == "homing-metrics"]
    env = service_link_env(metrics)
    assert env["HOMING_METRICS_PORT"].startswith("tcp://")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOMING_METRICS_PORT", env["HOMING_METRICS_PORT"])
        with pytest.raises(pydantic.ValidationError):
            Settings()
