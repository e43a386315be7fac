"""Pods outside homing's scope pass untouched (behaviour.md "Admission": scope)."""
from __future__ import annotations

import pytest

from homing_e2e import objects as o

pytestmark = pytest.mark.cluster


def untouched(p: dict) -> bool:
    ann = p["metadata"].get("annotations") or {}
    return not any(k.startswith("homing.io/") for k in ann) and o.terms(p) == []


async def test_namespace_not_opted_in(kube, operator):
    ns = await o.namespace(kube, f"off-{o.short_id()}", opted_in=False)
    owner = await o.owner_stand_in(kube, ns, "job")
    p = await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    assert untouched(p)


async def test_pod_label_opts_in_where_the_namespace_does_not(kube, operator):
    ns = await o.namespace(kube, f"off-{o.short_id()}", opted_in=False)
    owner = await o.owner_stand_in(kube, ns, "job")
    p = await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"}, labels={"homing.io/enabled": "true"})
    assert o.decision(p)["reason"] == "no-memory"


async def test_pod_label_opts_out(kube, operator, ns):
    owner = await o.owner_stand_in(kube, ns, "job")
    p = await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"}, labels={"homing.io/enabled": "false"})
    assert untouched(p)


async def test_no_accelerator_request(kube, operator, ns):
    owner = await o.owner_stand_in(kube, ns, "web")
    p = await o.pod(kube, ns, "web-0", owner=owner, npus=0)
    assert untouched(p)


async def test_daemonset_pods(kube, operator, ns):
    await o.node(kube, f"a-{ns}")
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "npu-exporter"},
        "spec": {
            "selector": {"matchLabels": {"app": "npu-exporter"}},
            "template": {
                "metadata": {"labels": {"app": "npu-exporter"}},
                "spec": {
                    "containers": [o.container()],
                    "automountServiceAccountToken": False,
                    "nodeSelector": {"kubernetes.io/hostname": f"a-{ns}"},
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
    }
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/daemonsets", body=ds)

    async def created():
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods")
        return got["items"]

    pods = await o.eventually(created, what="DaemonSet pod")
    assert all(untouched(p) for p in pods)


async def test_a_pod_with_no_controller_is_not_tracked(kube, operator, ns):
    p = await o.pod(kube, ns, "bare", annotations={"hccl/rankIndex": "0"})
    assert untouched(p)
