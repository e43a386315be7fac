"""Ranked pods come back to the node their rank ran on (behaviour.md "Identity" and "Admission":
a deleted rank, a whole job, a rank scaled back out)."""
from __future__ import annotations

import pytest

from homing.config import Settings
from homing_e2e import objects as o

KEEP_CLEAR = Settings().weights.keep_clear

pytestmark = pytest.mark.cluster


async def _run_then_replace(kube, ns, name, first_node, owner, annotations=None, labels=None):
    await o.pod(kube, ns, name, owner=owner, annotations=annotations, labels=labels)
    await o.bind(kube, ns, name, first_node)
    await o.running(kube, ns, name)
    await o.delete_pod(kube, ns, name)
    return await o.pod(kube, ns, name, owner=owner, annotations=annotations, labels=labels)


async def test_volcano_task_index_returns_home(kube, operator, ns):
    a, b = await o.node(kube, f"a-{ns}"), await o.node(kube, f"b-{ns}")
    owner = await o.owner_stand_in(kube, ns, "llama-train")
    ann = {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": "3"}
    sibling = {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": "4"}
    await o.pod(kube, ns, "llama-train-worker-4", owner=owner, annotations=sibling)
    await o.bind(kube, ns, "llama-train-worker-4", b)
    again = await _run_then_replace(kube, ns, "llama-train-worker-3", a, owner, annotations=ann)
    assert o.home(again) == a
    assert o.term_values(again, "In", weight=100) == [[a]]
    # keep clear of rank 4's home (the list also names other workloads' vacant homes, behaviour.md "Beyond the home")
    [keep] = o.term_values(again, "NotIn", weight=KEEP_CLEAR)
    assert b in keep and a not in keep
    assert o.decision(again)["rank"] == "worker/3"
    assert o.decision(again)["reason"] == "home"


async def test_hccl_rank_index_returns_home(kube, operator, ns):
    a, _, owner, ann = await o.rank_ran_on_a(kube, ns, {"hccl/rankIndex": "0"})
    await o.delete_pod(kube, ns, "job-0")
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    assert o.home(again) == a
    assert o.term_values(again, "In", weight=100) == [[a]]


async def test_statefulset_ordinal_returns_home(kube, operator, ns):
    nodes = [await o.node(kube, f"n{i}-{ns}") for i in range(3)]
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "infer"},
        "spec": {
            "replicas": 3,
            "podManagementPolicy": "Parallel",
            "serviceName": "infer",
            "selector": {"matchLabels": {"app": "infer"}},
            "template": {
                "metadata": {"labels": {"app": "infer"}},
                "spec": o.bound_by_the_test({"containers": [o.container()], "automountServiceAccountToken": False}),
            },
        },
    }
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/statefulsets", body=sts)
    for i in range(3):
        await o.eventually(lambda i=i: o.get_pod(kube, ns, f"infer-{i}"), what=f"infer-{i}")
        await o.bind(kube, ns, f"infer-{i}", nodes[i])
        await o.running(kube, ns, f"infer-{i}")
    first_uid = (await o.get_pod(kube, ns, "infer-1"))["metadata"]["uid"]
    # Not o.delete_pod: the controller may recreate infer-1 before a GET ever sees it gone.
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/infer-1", body={"gracePeriodSeconds": 0})

    async def recreated():
        p = await o.get_pod(kube, ns, "infer-1")
        return p if p["metadata"]["uid"] != first_uid else None

    again = await o.eventually(recreated, what="infer-1 recreated by the StatefulSet controller")
    assert o.home(again) == nodes[1]
    assert o.term_values(again, "In", weight=100) == [[nodes[1]]]
    [keep] = o.term_values(again, "NotIn", weight=KEEP_CLEAR)
    assert {nodes[0], nodes[2]} <= set(keep) and nodes[1] not in keep


async def test_unhealthy_home_gets_avoid_term_not_home(kube, operator, ns):
    a, _, owner, ann = await o.rank_ran_on_a(kube, ns)
    unhealthy_before = operator.metric("homing_nodes", health="unhealthy")
    await o.set_node_ready(kube, a, False)

    async def seen() -> bool:
        return operator.metric("homing_nodes", health="unhealthy") > unhealthy_before

    await o.eventually(seen, what="operator sees the node NotReady")
    await o.delete_pod(kube, ns, "job-0")
    # The fault is judged when the watch shows the pod ended; a new pod admitted before that
    # cannot know it (the review can arrive first: on kind it once did)
    await o.eventually(lambda: _log_mentions(operator, "pod ended on a faulty node", a), what="operator judged the end a fault")
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    assert o.home(again) is None
    assert o.term_values(again, "In", weight=100) == []
    assert all(a not in nodes for nodes in o.term_values(again, "In")), "an unhealthy node is never preferred"
    # the avoid term; the claimed term lists the rank's faults first (then any workload's claimed homes)
    avoid, claimed = o.term_values(again, "NotIn", weight=100)
    assert avoid == [a] and a in claimed
    assert o.decision(again)["reason"] == "home-faulted"  # it ended there while NotReady: a fault



async def test_vanished_home_gets_no_term(kube, operator, ns):
    a, _, owner, ann = await o.rank_ran_on_a(kube, ns)
    await o.delete_pod(kube, ns, "job-0")
    await kube.request("DELETE", f"/api/v1/nodes/{a}")
    await o.eventually(lambda: _log_mentions(operator, "node gone", a), what="operator saw the node go")
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    assert o.home(again) is None and o.term_values(again, "In", weight=100) == []
    assert all(a not in nodes for _, nodes in o.named_nodes(again)), "a vanished node is named by no term"
    assert o.decision(again)["reason"] == "home-gone"


async def test_placed_away_from_a_busy_home_is_counted_and_explained(kube, operator, ns):
    a, b, owner, _ = await o.rank_ran_on_a(kube, ns)
    await o.delete_pod(kube, ns, "job-0")
    # Rank 1 takes rank 0's node meanwhile; rank 0 comes back and is sent elsewhere.
    await o.pod(kube, ns, "job-1", owner=owner, annotations={"volcano.sh/task-index": "1"})
    await o.bind(kube, ns, "job-1", a)
    await o.running(kube, ns, "job-1")
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    assert o.home(again) == a
    await o.bind(kube, ns, "job-0", b)

    async def explained():
        got = await kube.request("GET", f"/api/v1/namespaces/{ns}/events", query=[("fieldSelector", "reason=PlacedAwayFromHome")])
        return got["items"]

    events = await o.eventually(explained, what="PlacedAwayFromHome Event")
    assert "home-busy" in events[0]["message"] and b in events[0]["message"]

    async def counted():
        mems = await o.placement_memories(kube, ns)
        return mems and mems[0]["status"]["stats"]["elsewhere"] == 1

    await o.eventually(counted, what="elsewhere counted in the PlacementMemory")


async def _log_mentions(operator, event: str, node_name: str) -> bool:
    return any(event in line and node_name in line for line in operator.log_path.read_text().splitlines())
