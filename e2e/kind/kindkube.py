"""What the kind-cluster scripts (pulls.py, tidal.py) share: the cluster's worker nodes, a
namespace made anew, cordoning, a Go duration read, homing's decision on a pod, and the
report (results file, printout, failures, exit code)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

E2E = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(E2E))

from homing.kube.client import MERGE_PATCH, Kube, KubeError  # noqa: E402

KUBECONFIG = E2E / ".kind" / "kubeconfig"
NPU = "huawei.com/Ascend910"
# What restricted Pod Security asks of every container (the namespaces enforce it).
RESTRICTED = {"runAsNonRoot": True, "runAsUser": 65534, "allowPrivilegeEscalation": False,
              "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


def workers(cluster: str) -> list[str]:
    nodes = subprocess.run([str(E2E / ".kind" / "bin" / "kind"), "get", "nodes", "--name", cluster],
                           capture_output=True, text=True, check=True).stdout.split()
    return sorted(n for n in nodes if "control-plane" not in n)


def go_seconds(text: str) -> float:
    """A Go duration as the kubelet prints it (1m2.5s, 850ms, 3.2s) in seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6}
    return sum(float(n) * units[u] for n, u in re.findall(r"([0-9.]+)(ms|µs|h|m|s)", text))


def decision_reason(pod: dict) -> str:
    """homing's decision reason on the pod (its homing.io/decision annotation), or ''."""
    try:
        return str(json.loads(((pod.get("metadata") or {}).get("annotations") or {}).get("homing.io/decision", "")).get("reason", ""))
    except (ValueError, AttributeError):
        return ""


async def cordon(kube: Kube, node: str, on: bool) -> None:
    await kube.request("PATCH", f"/api/v1/nodes/{node}", body={"spec": {"unschedulable": True if on else None}}, content_type=MERGE_PATCH)


async def delete_namespace(kube: Kube, ns: str) -> None:
    """Deleted and gone (its pods too)."""
    try:
        await kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    except KubeError as e:
        if e.status != 404:
            raise
    for _ in range(300):
        try:
            await kube.request("GET", f"/api/v1/namespaces/{ns}")
        except KubeError:
            return
        await asyncio.sleep(0.5)
    raise SystemExit(f"namespace {ns} was not deleted within 150 s")


async def fresh_namespace(kube: Kube, ns: str, homing: bool) -> None:
    """`ns` made anew, restricted, opted in to homing or not."""
    await delete_namespace(kube, ns)
    labels = {"pod-security.kubernetes.io/enforce": "restricted", **({"homing.io/enabled": "true"} if homing else {})}
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": ns, "labels": labels}})


def report(name: str, result: dict, problems: list[str]) -> int:
    """`result` stamped, written as `name` under bench/results (or HOMING_KIND_RESULTS: `make test`
    keeps its runs out of the tracked results) and printed; each problem printed; 1 if any."""
    path = Path(os.environ.get("HOMING_KIND_RESULTS") or E2E.parent / "bench" / "results") / name
    result = {**result, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, indent=2, sort_keys=True))
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0
