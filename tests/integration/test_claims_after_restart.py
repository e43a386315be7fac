"""Claims survive a restart and a leader change, on the real API server (issue 41; behaviour.md
"Claimed homes", "Deletion cost"): a Deployment replica bound to a waiting job's vacant home
carries homing's deletion-cost mark; the operator is restarted (or every replica replaced,
as a rolling upgrade does) and the mark is still there, never removed in between. The
pod's every change across the restart is read back from the API server's watch, from the
version that carried the mark. And a home whose pod went while no operator ran is claimed
by the new leader, whose marks cover it as a leader that saw the pod go would have."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from homing.engine.replicas.deletion_cost import ANNOTATION, is_mark
from homing.kube.client import Kube
from homing_e2e import failover, objects as o

pytestmark = pytest.mark.cluster


def deployment(name: str, replicas: int) -> dict[str, Any]:
    """Replicas the test binds itself (no scheduler serves this name)."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"schedulerName": "nobody", "containers": [o.container(npus=8)], "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0}}},
    }


def cost(pod: dict[str, Any]) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(ANNOTATION)


async def changes_since(kube: Kube, ns: str, name: str, version: str) -> list[tuple[str, str | None]]:
    """Every change of the pod after `version`, as the API server's watch replays it:
    (event type, its deletion cost then)."""
    resp = await kube.api.call_api(
        f"/api/v1/namespaces/{ns}/pods", "GET",
        query_params=[("watch", "1"), ("fieldSelector", f"metadata.name={name}"), ("resourceVersion", version),
                      ("timeoutSeconds", "2"), ("allowWatchBookmarks", "false")],
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"], _preload_content=False,
    )
    body = (await resp.read()).decode()
    assert resp.status == 200, body
    out = []
    for line in filter(None, body.splitlines()):
        event = json.loads(line)
        assert event["type"] != "ERROR", event  # a version too old to replay would hide the history
        out.append((event["type"], cost(event["object"])))
    return out


class Gang:
    """Job `train` (a stand-in controller): rank 0 ran on `a` and was evicted, rank 1 runs on
    `c`, rank 2 waits; a Deployment's replicas sit on `a` (its claimed home) and `c` (rank 1's,
    held)."""

    def __init__(self, kube: Kube, ns: str) -> None:
        self.kube, self.ns = kube, ns

    async def set_up(self) -> None:
        kube, ns = self.kube, self.ns
        self.a, self.c = await o.node(kube, f"a-{ns}"), await o.node(kube, f"c-{ns}")
        job = await o.owner_stand_in(kube, ns, "train")
        for rank, node in (("0", self.a), ("1", self.c)):
            await o.pod(kube, ns, f"train-{rank}", owner=job, annotations={"volcano.sh/task-index": rank}, npus=8)
            await o.bind(kube, ns, f"train-{rank}", node)
            await o.running(kube, ns, f"train-{rank}")
        await o.pod(kube, ns, "train-2", owner=job, annotations={"volcano.sh/task-index": "2"}, npus=8)  # waits
        await o.delete_pod(kube, ns, "train-0")  # evicted: `a` is its vacant home, the job still waits
        await kube.request("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", body=deployment("infer", 2))
        pods = await o.eventually(lambda: self._replicas(2), what="2 replicas")
        self.on_a, self.on_c = sorted(p["metadata"]["name"] for p in pods)
        await o.bind(kube, ns, self.on_a, self.a)
        await o.bind(kube, ns, self.on_c, self.c)

    async def _replicas(self, n: int) -> list[dict[str, Any]] | None:
        got = await self.kube.request("GET", f"/api/v1/namespaces/{self.ns}/pods", query=[("labelSelector", "app=infer")])
        pods = got["items"]
        return pods if len(pods) == n and not any(p["metadata"].get("deletionTimestamp") for p in pods) else None

    async def marked(self, name: str) -> dict[str, Any] | None:
        pod = await o.get_pod(self.kube, self.ns, name)
        return pod if is_mark(cost(pod)) else None

    async def remembered(self) -> bool:
        """Ranks 0 and 1 are in the job's PlacementMemory: what a new process loads."""
        for mem in await o.written_memories(self.kube, self.ns):
            if ((mem.get("status") or {}).get("summary") or {}).get("ranks") == 2:
                return True
        return False


async def test_the_mark_on_a_claimed_home_survives_an_operator_restart(kube: Kube, operator, ns: str):
    gang = Gang(kube, ns)
    await gang.set_up()
    before = await o.eventually(lambda: gang.marked(gang.on_a), timeout=30, what="the replica on the claimed home marked")
    assert cost(await o.get_pod(kube, ns, gang.on_c)) is None, "rank 1 holds `c`: not claimed"
    await o.eventually(gang.remembered, timeout=30, what="both ranks written to the PlacementMemory")

    operator.stop()  # SIGTERM, as a rolling upgrade stops a pod
    await o.delete_pod(kube, ns, "train-1")  # rank 1 goes while no operator runs: `c` is vacant, unseen
    operator.start()

    async def leading() -> bool:
        return operator.metric("homing_leader") == 1.0

    await o.eventually(leading, timeout=30, what="the restarted operator leading")
    try:  # the new leader's marks loop has run: it marks what it could only know from memory and the listing
        after_c = await o.eventually(lambda: gang.marked(gang.on_c), timeout=20, what="the replica on `c` marked")
    except TimeoutError:
        after_c = None
    history = await changes_since(kube, ns, gang.on_a, before["metadata"]["resourceVersion"])
    assert all(is_mark(value) for _, value in history), f"the mark was removed across the restart: {history}"
    assert cost(await o.get_pod(kube, ns, gang.on_a)) == cost(before), "the mark kept its value"
    assert after_c is not None, "the home vacated while no operator ran is claimed by the new leader"


async def test_the_mark_on_a_claimed_home_survives_a_rolling_upgrade(kube: Kube, kubeconfig):
    """Two replicas; each is replaced in turn (a new one started and ready, then the old one
    drained and stopped), so the last leader is a process that never saw the home vacated."""
    replicas, ns = await failover.replica_set(kube, kubeconfig, f"roll-{o.short_id()}")
    try:
        await asyncio.to_thread(replicas.add)
        await asyncio.to_thread(replicas.add)
        gang = Gang(kube, ns)
        await gang.set_up()
        before = await o.eventually(lambda: gang.marked(gang.on_a), timeout=60, what="the replica on the claimed home marked")
        await o.eventually(gang.remembered, timeout=30, what="both ranks written to the PlacementMemory")
        first = list(replicas.processes)
        await failover.replace_each_process(replicas)
        leader, _ = await asyncio.to_thread(replicas.wait_leader, 60)
        assert leader not in first, "the leader is a replica started after the home was vacated"
        await asyncio.sleep(5)  # several passes of the new leader's marks loop (1 s apart)
        history = await changes_since(kube, ns, gang.on_a, before["metadata"]["resourceVersion"])
        assert all(is_mark(value) for _, value in history), f"the mark was removed during the upgrade: {history}"
        assert cost(await o.get_pod(kube, ns, gang.on_a)) == cost(before)
        assert cost(await o.get_pod(kube, ns, gang.on_c)) is None, "rank 1 still holds `c`"
    finally:
        replicas.stop()
