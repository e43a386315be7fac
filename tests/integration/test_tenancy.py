"""Tenancy on the real API server and controller manager, with the operator as users run it
(docs/behaviour.md "Identity", "Tenants"): a pod naming another namespace's ReplicaSet gets
none of that Deployment's homes and leaves its PlacementMemory as it was; pods created naming
a node (one that does not exist, one whose kubelet never takes them) claim nothing, for
their own namespace or another; a workload's real claim steers and marks only its own
namespace's pods by default."""
from __future__ import annotations

import asyncio

import pytest

from homing.engine.memory.entries import OwnerMemory
from homing.engine.replicas.deletion_cost import ANNOTATION, is_mark
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.placementmemory import merge, read_object
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

QUIET_SECONDS = 6.0  # a few of the leader's write (1 s) and mark (1 s) intervals: long enough to see a wrong write


def deployment(name: str, replicas: int) -> dict:
    spec = o.bound_by_the_test({"containers": [o.container(npus=8)], "automountServiceAccountToken": False,
                                "terminationGracePeriodSeconds": 0})
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


async def replicas_of(kube: Kube, ns: str, app: str, n: int) -> list[dict] | None:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
    pods = [p for p in got["items"] if not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == n else None


async def memories(kube: Kube, ns: str) -> list[OwnerMemory]:
    """Every owner's memory in the namespace, as written."""
    by_owner: dict[str, list] = {}
    for item in await o.written_memories(kube, ns):
        fragment = read_object(item)
        by_owner.setdefault(fragment.owner.uid, []).append(fragment)
    return [merge(fragments) for fragments in by_owner.values()]


async def pool_of(kube: Kube, ns: str) -> dict[str, tuple[float, bool]]:
    """The pool homes of the namespace's owners, as written: node -> (last used, warm)."""
    return {n: (e.last_used, e.warm) for mem in await memories(kube, ns) for n, e in mem.pool.items()}


async def quiet(read, seconds: float = 3.0, timeout: float = 30.0):
    """What `read()` returns once it has not changed for `seconds`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last, since = await read(), loop.time()
    while loop.time() < deadline:
        await asyncio.sleep(0.25)
        now = await read()
        if now != last:
            last, since = now, loop.time()
        elif loop.time() - since >= seconds:
            return last
    raise TimeoutError(f"still changing after {timeout} s: {last}")


async def stays(check, what: str, seconds: float = QUIET_SECONDS) -> None:
    """`check` holds throughout `seconds` (the operator had time to do what it must not)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    while loop.time() < until:
        assert await check(), what
        await asyncio.sleep(0.25)


def named_nodes(pod: dict) -> set[str]:
    return {n for _, values in o.named_nodes(pod) for n in values}


async def node_without_kubelet(kube: Kube, name: str) -> str:
    """A Ready node no kubelet serves (no fake-kubelet label): a pod created naming it is never taken."""
    await kube.request("POST", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": {"kubernetes.io/hostname": name}}})
    await kube.request("PATCH", f"/api/v1/nodes/{name}/status", body={"status": o.node_status(True)},
                       content_type=MERGE_PATCH)
    await o.set_not_ready_taint(kube, name, False)
    return name


async def test_a_pod_naming_another_namespaces_replicaset_gets_none_of_its_homes_nor_changes_its_memory(
        kube: Kube, operator, ns: str):
    """A's Deployment ran a replica on a1 and scaled to zero: a1 is its pool's free home. A pod
    in B names A's ReplicaSet (name and UID) as its controller: it must be kept under nothing
    of A's, get no term naming a1, and, bound in B, leave A's PlacementMemory as it was."""
    other = await o.namespace(kube, f"{ns}-b")
    a1, b1 = await o.node(kube, f"a1-{ns}"), await o.node(kube, f"b1-{ns}")
    await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("web", 1))
    (own,) = await o.eventually(lambda: replicas_of(kube, ns, "web", 1), what="A's replica")
    await o.bind(kube, ns, own["metadata"]["name"], a1)
    await o.running(kube, ns, own["metadata"]["name"])
    await o.eventually(lambda: _pool_is(kube, ns, {a1}), what="A's pool remembers a1")
    await kube.request("PATCH", f"/apis/apps/v1/namespaces/{ns}/deployments/web", body={"spec": {"replicas": 0}},
                       content_type=MERGE_PATCH)
    await o.eventually(lambda: _none_left(kube, ns, "web"), what="A scaled to zero")
    # The operator writes a pod's departure into A's PlacementMemory up to a second or more after
    # the API shows it gone (slower on kind): the memory as it stands once A's own changes are in
    before = await quiet(lambda: pool_of(kube, ns))
    (rs,) = (await kube.request("GET", f"/apis/apps/v1/namespaces/{ns}/replicasets"))["items"]
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"], "uid": rs["metadata"]["uid"],
           "controller": True}
    labels = {"app": "web", "pod-template-hash": rs["metadata"]["labels"]["pod-template-hash"]}

    # The garbage collector deletes a pod whose owner is not in its namespace; bound at once,
    # the operator sees it bound first (a try it wins is enough: retry a lost race).
    for attempt in range(10):
        name = f"intruder-{attempt}"
        intruder = await o.pod(kube, other, name, owner=ref, labels=labels, npus=8)
        decision = o.decision(intruder)
        assert f"/{ns}/" not in (decision.get("owner") or ""), f"kept under A's workload: {decision}"
        assert decision.get("owner") == f"ReplicaSet/{other}/{rs['metadata']['name']}"
        assert a1 not in named_nodes(intruder) and o.home(intruder) != a1, "A's home in B's terms"
        try:
            await o.bind(kube, other, name, b1)
            break
        except KubeError as err:  # gone, or being deleted
            if err.status not in (404, 409, 500):
                raise
            print(f"intruder {name} not bound ({err.status}): collected first")
    else:
        pytest.fail("the garbage collector deleted every intruder before it could be bound")

    async def a_unchanged() -> bool:
        now = await pool_of(kube, ns)
        assert now == before, f"A's pool was {before}, now {now}"
        return True

    await stays(a_unchanged, "A's PlacementMemory changed by B's pod")
    assert b1 not in await pool_of(kube, ns)


async def _pool_is(kube: Kube, ns: str, nodes: set[str]) -> bool:
    return set(await pool_of(kube, ns)) == nodes


async def _none_left(kube: Kube, ns: str, app: str) -> bool:
    got = await kube.request("GET", f"/api/v1/namespaces/{ns}/pods", query=[("labelSelector", f"app={app}")])
    return not got["items"]


async def test_pods_created_naming_a_node_claim_nothing(kube: Kube, operator, ns: str):
    """A squatter creates its ranks naming nodes itself: "ghost" (no such node) and an idle
    node whose kubelet never takes them; one more rank waits, so the squatter is active; then
    it deletes the two. Nobody, in its namespace or another, keeps off those nodes, no
    replica there is marked for deletion, and its PlacementMemory remembers neither."""
    other = await o.namespace(kube, f"{ns}-b")
    ghost, idle = f"ghost-{ns}", await node_without_kubelet(kube, f"idle-{ns}")
    squat = await o.owner_stand_in(kube, ns, "squat")
    for rank, node in (("0", ghost), ("1", idle)):
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"squat-{rank}", "ownerReferences": [squat],
                             "annotations": {"volcano.sh/task-index": rank}},
                "spec": {"nodeName": node, "containers": [o.container(npus=8)], "automountServiceAccountToken": False}}
        await kube.request("POST", f"/api/v1/namespaces/{ns}/pods", body=body)
    await o.pod(kube, ns, "squat-2", owner=squat, annotations={"volcano.sh/task-index": "2"}, npus=8)  # waits
    for rank in ("0", "1"):
        await o.delete_pod(kube, ns, f"squat-{rank}")

    for where in (ns, other):  # another workload of the squatter's namespace, and another tenant's
        job = await o.owner_stand_in(kube, where, "train")
        admitted = await o.pod(kube, where, "train-0", owner=job, annotations={"volcano.sh/task-index": "0"}, npus=8)
        assert not named_nodes(admitted) & {ghost, idle}, f"{where}: kept off nodes a squatter named"
    replicas = []
    for where in (ns, other):
        await kube.request("POST", f"/apis/apps/v1/namespaces/{where}/deployments", body=deployment("infer", 1))
        (r,) = await o.eventually(lambda: replicas_of(kube, where, "infer", 1), what=f"{where}: a replica")  # noqa: B023 (awaited here)
        await o.bind(kube, where, r["metadata"]["name"], idle)
        replicas.append((where, r["metadata"]["name"]))

    async def unmarked() -> bool:
        costs = [((await o.get_pod(kube, w, n))["metadata"].get("annotations") or {}).get(ANNOTATION) for w, n in replicas]
        return not any(is_mark(c) for c in costs)

    await stays(unmarked, "a replica on a node a squatter named was marked for deletion")
    for mem in await memories(kube, ns):
        if mem.owner.uid == squat["uid"]:
            remembered = {e.node for e in mem.ranks.values()} | set(mem.pool)
            assert not remembered & {ghost, idle}, "the squatter remembers a node it never held"


async def test_another_namespaces_claim_neither_steers_nor_marks_by_default(kube: Kube, operator, ns: str):
    """A's job ran rank 0 on x and was evicted; rank 1 waits: x is A's claimed home. A's own
    replica bound to x is marked (the control); B's pod is not kept off x, B's replica on x
    is not marked (tenancy.shared_nodes is off)."""
    other = await o.namespace(kube, f"{ns}-b")
    x = await o.node(kube, f"x-{ns}")
    job = await o.owner_stand_in(kube, ns, "train")
    await o.pod(kube, ns, "train-0", owner=job, annotations={"volcano.sh/task-index": "0"}, npus=8)
    await o.bind(kube, ns, "train-0", x)
    await o.running(kube, ns, "train-0")
    await o.pod(kube, ns, "train-1", owner=job, annotations={"volcano.sh/task-index": "1"}, npus=8)  # waits
    await o.delete_pod(kube, ns, "train-0")

    own_job = await o.owner_stand_in(kube, ns, "eval")
    mine = await o.pod(kube, ns, "eval-0", owner=own_job, annotations={"volcano.sh/task-index": "0"}, npus=8)
    assert x in named_nodes(mine), "the control: a pod of A keeps off A's claimed home"
    their_job = await o.owner_stand_in(kube, other, "eval")
    theirs = await o.pod(kube, other, "eval-0", owner=their_job, annotations={"volcano.sh/task-index": "0"}, npus=8)
    assert x not in named_nodes(theirs), "B's pod steered by A's claim"

    replicas = {}
    for where in (ns, other):
        await kube.request("POST", f"/apis/apps/v1/namespaces/{where}/deployments", body=deployment("infer", 1))
        (r,) = await o.eventually(lambda: replicas_of(kube, where, "infer", 1), what=f"{where}: a replica")  # noqa: B023 (awaited here)
        await o.bind(kube, where, r["metadata"]["name"], x)
        replicas[where] = r["metadata"]["name"]

    async def cost(where: str) -> str | None:
        return ((await o.get_pod(kube, where, replicas[where]))["metadata"].get("annotations") or {}).get(ANNOTATION)

    async def a_marked() -> bool:
        return is_mark(await cost(ns))

    await o.eventually(a_marked, timeout=30, what="A's replica on A's claimed home marked")

    async def b_unmarked() -> bool:
        return not is_mark(await cost(other))

    await stays(b_unmarked, "B's replica marked for A's claim")
