"""The re-list of kopf-watched kinds against a real API server (behaviour.md "Operation").
kopf's watch is played here by the test, which delivers the events it chooses: what a watch
that was away, or stopped, would have delivered. The re-list and its loop are the
product's, unchanged; with the re-list switched off the defects it exists for come back."""
from __future__ import annotations

import asyncio

import pytest

from homing.config import Settings, Watching
from homing.kube.client import METADATA_ONLY, Kube
from homing.kube.runtime import Runtime
from homing.kube.watch.watches import Kind, Watched, Watches
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster


def pod_watches(kube: Kube, ns: str, reconcile_seconds: float) -> tuple[Runtime, Watches]:
    rt = Runtime(Settings(watching=Watching(reconcile_seconds=reconcile_seconds, relist_gap_seconds=0)))
    rt.cluster.opted_in.add(ns)
    pods = Watched(Kind("pods", "", "v1", "pods", namespace=ns), rt.pods.observe, relisted=rt.pods.relisted,
                   tombstone=None)
    return rt, Watches(kube, rt.settings, [pods])


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class Listings:
    """The real client, recording what each GET asked for (its Accept header)."""

    def __init__(self, kube: Kube) -> None:
        self.kube, self.accepts = kube, []

    async def request(self, method, path, *args, accept="application/json", **kw):
        if method == "GET":
            self.accepts.append(accept)
        return await self.kube.request(method, path, *args, accept=accept, **kw)


@pytest.mark.parametrize("relist", [True, False], ids=["relist", "relist-off"])
async def test_a_pod_deleted_while_the_watch_was_away_leaves_its_home_after_kopf_lists_again(kube, ns, relist):
    """kopf lists again after an expired version and hands over the pods that are there, never
    the one deleted meanwhile: the re-list it triggers finds the phantom. kopf's listing handed
    every object over, so that re-list asks for identities alone (a pod's spec and status are
    most of its bytes, and kopf lists again when the loop is busiest); a periodic re-list, which
    must find changes too, lists in full."""
    listings = Listings(kube)
    rt, watches = pod_watches(listings, ns, reconcile_seconds=300 if relist else 0)  # no periodic pass in this test
    a, b = await o.node(kube, f"a-{ns}"), await o.node(kube, f"b-{ns}")
    owner = await o.owner_stand_in(kube, ns, "job")
    key = f"{ns}/{owner['uid']}"
    for rank, node in (("0", a), ("1", b)):
        await o.pod(kube, ns, f"job-{rank}", owner=owner, annotations={"volcano.sh/task-index": rank})
        await o.bind(kube, ns, f"job-{rank}", node)
    assert await watches.load("pods")
    assert rt.index.occupied_nodes(key) == {a, b}
    assert listings.accepts == ["application/json"], "the load hands every object over: in full"
    task = asyncio.create_task(watches.reconcile_forever("pods"))
    try:
        await o.delete_pod(kube, ns, "job-0")  # while the watch is away: its DELETED never comes
        watches.deliver("pods", None, await o.get_pod(kube, ns, "job-1"))  # kopf's listing after the 410
        if relist:
            await o.eventually(lambda: _now(rt.index.occupied_nodes(key) == {b}), what="the phantom dropped")
            assert listings.accepts == ["application/json", METADATA_ONLY]
        else:
            await asyncio.sleep(2)
            assert rt.index.occupied_nodes(key) == {a, b}, "kopf's own listing never says what went"
    finally:
        await stop(task)
    assert rt.index.owner(key).ranks["0"].node == a, "the memory itself is kept"
    if relist:
        await watches.relist("pods")  # as the periodic pass lists
        assert listings.accepts[-1] == "application/json"


async def test_a_watch_that_stops_delivering_fails_liveness_until_it_delivers_again(kube, ns):
    rt, watches = pod_watches(kube, ns, reconcile_seconds=0.3)
    a, owner, task = await _one_rank_loaded(kube, ns, watches)
    try:
        for spin in range(4):  # a watch that delivers every change: never behind
            await _label(kube, ns, "job-0", spin)
            watches.deliver("pods", "MODIFIED", await o.get_pod(kube, ns, "job-0"))
            await asyncio.sleep(0.4)
            assert watches.problems(stale_seconds=0.5) == []
        await o.bind(kube, ns, "job-0", a)  # the watch is dead from here: nothing delivered
        key = f"{ns}/{owner['uid']}"
        await o.eventually(lambda: _now(rt.index.occupied_nodes(key) == {a}), what="the re-list handing the bind over")
        await o.eventually(lambda: _now(any("pods" in p for p in watches.problems(stale_seconds=0.5))),
                           what="liveness naming the watch")
        watches.deliver("pods", "MODIFIED", await o.get_pod(kube, ns, "job-0"))  # it delivers again
        assert watches.problems(stale_seconds=0.5) == []
    finally:
        await stop(task)


async def test_an_optional_kind_not_installed_is_not_loaded_and_nothing_fails(kube):
    rt = Runtime(Settings())
    absent = Watched(Kind("gadgets", "nowhere.homing.io", "v1", "gadgets", optional=True), lambda *_: None)
    watches = Watches(kube, rt.settings, [absent])
    assert await watches.load("gadgets") is False
    assert not absent.loaded and not absent.installed and watches.problems(stale_seconds=0) == []


async def _one_rank_loaded(kube: Kube, ns: str, watches: Watches) -> tuple[str, dict, asyncio.Task]:
    """A node, a pending rank 0 of a job, the pods loaded, and the re-list loop running."""
    a = await o.node(kube, f"a-{ns}")
    owner = await o.owner_stand_in(kube, ns, "job")
    await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    assert await watches.load("pods")
    return a, owner, asyncio.create_task(watches.reconcile_forever("pods"))


async def _label(kube: Kube, ns: str, name: str, spin: int) -> None:
    await kube.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}", body={"metadata": {"labels": {"spin": str(spin)}}},
                       content_type="application/merge-patch+json")


async def _now(value):
    return value


async def test_with_the_relist_off_a_watch_that_stopped_delivering_goes_unnoticed(kube, ns):
    """The defect the re-list closes: kopf says nothing of a watcher that died, so without the
    re-list the bind never reaches the engine and liveness never names the watch."""
    rt, watches = pod_watches(kube, ns, reconcile_seconds=0)
    a, owner, task = await _one_rank_loaded(kube, ns, watches)
    try:
        await o.bind(kube, ns, "job-0", a)  # the watch is dead: nothing delivered
        await asyncio.sleep(2)
        assert rt.index.occupied_nodes(f"{ns}/{owner['uid']}") == set()
        assert watches.problems(stale_seconds=0.5) == []
    finally:
        await stop(task)
