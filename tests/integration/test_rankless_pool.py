"""A Deployment scaled in and out again: each new replica is promised a different
warm node, never one still held by a live replica (behaviour.md "Pools")."""
from __future__ import annotations

import pytest

from homing.kube.client import MERGE_PATCH
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster


def deployment(replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "infer"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {
                "metadata": {"labels": {"app": "infer"}},
                "spec": o.bound_by_the_test({"containers": [o.container()], "automountServiceAccountToken": False,
                                             "terminationGracePeriodSeconds": 0}),
            },
        },
    }


async def _pods(kube, ns) -> list[dict]:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods")
    return [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]


async def _scale(kube, ns, replicas: int) -> list[dict]:
    await kube.request(
        "PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/infer", body={"spec": {"replicas": replicas}}, content_type=MERGE_PATCH
    )

    async def settled():
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods")
        pods = got["items"]
        done = len(pods) == replicas and not any(p["metadata"].get("deletionTimestamp") for p in pods)
        return (pods,) if done else None  # a tuple: truthy even when no pods are left

    (pods,) = await o.eventually(settled, timeout=60, what=f"{replicas} replicas")
    return pods


async def _bind_home_or(kube, ns, pods: list[dict], fallback: list[str]) -> None:
    """Stand in for a scheduler that honours the preference: bind each pod to its home."""
    spare = iter(fallback)
    for p in pods:
        if p["spec"].get("nodeName"):
            continue
        await o.bind(kube, ns, p["metadata"]["name"], o.home(p) or next(spare))
        await o.running(kube, ns, p["metadata"]["name"])


async def test_scale_in_and_out_promises_distinct_free_homes(kube, operator, ns):
    nodes = [await o.node(kube, f"n{i}-{ns}") for i in range(4)]
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment(4))
    first = await o.eventually(lambda: _four(kube, ns), what="4 replicas")
    await _bind_home_or(kube, ns, first, nodes)

    async def pool_remembered():
        mems = await o.placement_memories(kube, ns)
        return mems and (mems[0].get("status") or {}).get("summary", {}).get("pool") == 4

    await o.eventually(pool_remembered, what="a pool of 4 homes in the PlacementMemory")

    # 4 -> 2 -> 4: the two new replicas go to the two freed nodes, one each.
    kept = await _scale(kube, ns, 2)
    occupied = {p["spec"]["nodeName"] for p in kept}
    again = await _scale(kube, ns, 4)
    new = [p for p in again if not p["spec"].get("nodeName")]
    homes = [o.home(p) for p in new]
    assert len(new) == 2
    assert None not in homes and len(set(homes)) == 2
    assert set(homes) == set(nodes) - occupied
    await _bind_home_or(kube, ns, new, [])

    # 4 -> 0 -> 4: every replica is promised a different one of the four warm nodes.
    await _scale(kube, ns, 0)
    again = await _scale(kube, ns, 4)
    homes = [o.home(p) for p in again]
    assert sorted(homes) == sorted(nodes)
    assert all(o.decision(p)["reason"] == "pool" for p in again)
    # Each replica also prefers the free homes not yet promised: 3, 2, 1, then none left.
    others = [(o.term_values(p, "In", weight=50) or [[]])[0] for p in again]
    assert sorted(len(x) for x in others) == [0, 1, 2, 3]
    assert all(o.home(p) not in x for p, x in zip(again, others))
    await _bind_home_or(kube, ns, again, [])

    async def counted():
        mem = (await o.placement_memories(kube, ns))[0]["status"]
        return mem["stats"]["home"] >= 6 and mem["stats"]["elsewhere"] == 0

    await o.eventually(counted, what="six returns home counted in the PlacementMemory")
    events = await kube.request("GET", f"/api/v1/namespaces/{ns}/events", query=[("fieldSelector", "reason=ReturnedHome")])
    assert len(events["items"]) >= 6


async def _four(kube, ns):
    pods = await _pods(kube, ns)
    return pods if len(pods) == 4 else None
