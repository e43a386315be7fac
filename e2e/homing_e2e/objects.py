"""Objects the tests create, and the few API calls they need, as plain dicts."""
from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing_e2e.fake_kubelet import FAKE_NODE_LABEL

ROOT = Path(__file__).resolve().parents[2]
NPU = "huawei.com/Ascend910"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def short_id() -> str:
    return uuid.uuid4().hex[:6]


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 30, what: str = "condition") -> Any:
    """Polls `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await check()
        except KubeError as err:
            last = err
            if err.status != 404:
                raise
        if last and not isinstance(last, Exception):
            return last
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{what} not reached in {timeout}s (last: {last!r})")


async def install_crd(kube: Kube, crd: dict | None = None) -> None:
    """homing's CRD, or the one given; waits until it is served."""
    crd = crd or yaml.safe_load((ROOT / "crds" / "placementmemory.yaml").read_text())
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    try:
        await kube.request("POST", path, body=crd)
    except KubeError as err:
        if err.status != 409:
            raise

    async def established() -> bool:
        got = await kube.request("GET", f"{path}/{crd['metadata']['name']}")
        return any(c["type"] == "Established" and c["status"] == "True" for c in (got.get("status") or {}).get("conditions") or [])

    await eventually(established, what="CRD established")


async def namespace(kube: Kube, name: str, opted_in: bool = True) -> str:
    labels = {"homing.io/enabled": "true"} if opted_in else {}
    await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": name, "labels": labels}})
    await eventually(
        lambda: kube.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default"), what="default SA"
    )
    return name


def node_status(ready: bool, npus: int = 8) -> dict:
    return {
        "capacity": {NPU: str(npus), "cpu": "192", "memory": "2Ti", "pods": "110"},
        "allocatable": {NPU: str(npus), "cpu": "192", "memory": "2Ti", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "HarnessSet",
                        "message": "set by the test harness"}],
    }


async def node(kube: Kube, name: str, labels: dict[str, str] | None = None, ready: bool = True) -> str:
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, FAKE_NODE_LABEL: "true", **(labels or {})}},
    }
    await kube.request("POST", "/api/v1/nodes", body=body)
    await set_node_ready(kube, name, ready)
    return name


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


async def set_node_ready(kube: Kube, name: str, ready: bool) -> None:
    """What the kubelet and the node lifecycle controller would do: the Ready condition,
    and the not-ready taint the API server put on the new node (off when Ready)."""
    await kube.request("PATCH", f"/api/v1/nodes/{name}/status", body={"status": node_status(ready)}, content_type=MERGE_PATCH)
    await set_not_ready_taint(kube, name, not ready)


async def set_not_ready_taint(kube: Kube, name: str, tainted: bool) -> None:
    """The API server taints every new node not-ready; only the node lifecycle controller
    (off in the local control plane) lifts it once the node is Ready."""
    taints = [NOT_READY_TAINT] if tainted else []
    await kube.request("PATCH", f"/api/v1/nodes/{name}", body={"spec": {"taints": taints}}, content_type=MERGE_PATCH, timeout=120)


async def owner_stand_in(kube: Kube, ns: str, name: str) -> dict:
    """A ConfigMap that plays a job controller: it owns pods, and deleting it lets the
    garbage collector take its dependents (the real Volcano Job comes in the e2e issue)."""
    cm = await kube.request("POST", f"/api/v1/namespaces/{ns}/configmaps", body={"metadata": {"name": name}})
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": cm["metadata"]["uid"], "controller": True}


def bound_by_the_test(spec: dict) -> dict:
    """A pod spec (or a controller's template's) whose pods the test binds itself. Another
    cluster has a kube-scheduler that would bind them first (HTTP 409 on the test's binding);
    no scheduler serves this name. The harness's own control plane has none: unchanged there."""
    if os.environ.get("HOMING_E2E_KUBECONFIG"):
        spec["schedulerName"] = "homing-e2e-bound-by-the-test"
    return spec


def container(npus: int = 1, resource: str = NPU) -> dict:
    requests = {resource: str(npus)} if npus else {}
    return {"name": "main", "image": "registry.invalid/train:15g", "resources": {"requests": requests, "limits": requests}}


async def pod(
    kube: Kube,
    ns: str,
    name: str,
    owner: dict | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    npus: int = 1,
    affinity: dict | None = None,
    image: str | None = None,
    dry_run: bool = False,
) -> dict:
    """A pod as the tests create it; with dry_run the API server admits it (homing's webhook
    decides) and stores nothing."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "spec": {"containers": [container(npus)], "automountServiceAccountToken": False},
    }
    if image:
        body["spec"]["containers"][0]["image"] = image
    if owner:
        body["metadata"]["ownerReferences"] = [owner]
    if affinity:
        body["spec"]["affinity"] = affinity
    bound_by_the_test(body["spec"])
    return await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body, query=[("dryRun", "All")] if dry_run else None)


async def bind(kube: Kube, ns: str, name: str, node_name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
    await kube.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=body)


async def get_pod(kube: Kube, ns: str, name: str) -> dict:
    return await kube.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")


async def running(kube: Kube, ns: str, name: str) -> dict:
    async def check() -> dict | None:
        p = await get_pod(kube, ns, name)
        return p if p.get("status", {}).get("phase") == "Running" else None

    return await eventually(check, what=f"pod {name} Running")


async def delete_pod(kube: Kube, ns: str, name: str) -> None:
    """Gone for real: the fake kubelet finishes graceful deletions too, this skips the wait."""
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", body={"gracePeriodSeconds": 0})

    async def gone() -> bool:
        try:
            await get_pod(kube, ns, name)
        except KubeError as err:
            return err.status == 404
        return False

    await eventually(gone, what=f"pod {name} gone")


def terms(pod_obj: dict) -> list[dict]:
    """homing's preferred terms: every preferred term that was not in the user's spec."""
    aff = (pod_obj.get("spec") or {}).get("affinity") or {}
    return list(((aff.get("nodeAffinity") or {}).get(PREFERRED)) or [])


def term_values(pod_obj: dict, operator: str, weight: int | None = None) -> list[list[str]]:
    out = []
    for t in terms(pod_obj):
        for e in t["preference"].get("matchExpressions", []):
            if e["operator"] == operator and (weight is None or t["weight"] == weight):
                out.append(sorted(e.get("values", [])))
    return out


def named_nodes(pod_obj: dict) -> list[tuple[int, list[str]]]:
    """(weight, values) of every expression in homing's preferred terms."""
    return [(t["weight"], list(e.get("values", []))) for t in terms(pod_obj) for e in t["preference"].get("matchExpressions", [])]


def decision(pod_obj: dict) -> dict:
    raw = (pod_obj["metadata"].get("annotations") or {}).get("homing.io/decision")
    return json.loads(raw) if raw else {}


def home(pod_obj: dict) -> str | None:
    return (pod_obj["metadata"].get("annotations") or {}).get("homing.io/home")


async def placement_memories(kube: Kube, ns: str) -> list[dict]:
    got = await kube.request("GET", f"/apis/homing.io/v1alpha1/namespaces/{ns}/placementmemories")
    return got.get("items", [])


async def written_memories(kube: Kube, ns: str) -> list[dict]:
    """The objects whose status has been written (the operator creates, then writes it)."""
    return [m for m in await placement_memories(kube, ns) if m.get("status")]


async def rank_ran_on_a(kube: Kube, ns: str, annotations: dict[str, str] | None = None) -> tuple[str, str, dict, dict]:
    """Two nodes a and b; rank 0 of job `job` was bound to a and ran there.
    Returns (a, b, owner reference, the rank's annotations)."""
    a, b = await node(kube, f"a-{ns}"), await node(kube, f"b-{ns}")
    owner = await owner_stand_in(kube, ns, "job")
    ann = annotations or {"volcano.sh/task-index": "0"}
    await pod(kube, ns, "job-0", owner=owner, annotations=ann)
    await bind(kube, ns, "job-0", a)
    await running(kube, ns, "job-0")
    return a, b, owner, ann


HOMING_SA = "system:serviceaccount:homing-system:homing"


async def patch_as_homing(kube: Kube, path: str, body: dict) -> tuple[int, str]:
    """A merge patch of `path` as homing's ServiceAccount sends it, impersonated: what a
    ValidatingAdmissionPolicy on homing's writes sees. (status, body text)."""
    resp = await kube.api.call_api(
        path, "PATCH",
        header_params={"Content-Type": MERGE_PATCH, "Accept": "application/json", "Impersonate-User": HOMING_SA,
                       "Impersonate-Group": "system:serviceaccounts"},
        body=body, auth_settings=["BearerToken"], _preload_content=False,
    )
    return resp.status, (await resp.read()).decode(errors="replace")
