"""On the real control plane: memory survives a restart after a long quiet run, a deleted
namespace takes its owners along, the sweeper survives an API timeout. (A pod deleted
while the pod watch was away: tests/integration/test_watches.py.)"""
from __future__ import annotations

import asyncio
import datetime
import time

import pytest

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.kube.client import Kube
from homing.kube.health.selfhealth import Supervisor
from homing.kube.runtime import Runtime
from homing.kube.signals import metrics
from homing.kube.store import upkeep
from homing.kube.store.store import Store
from homing.kube.store.upkeep import Sweeper
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

PMEM = "/apis/homing.io/v1alpha1/namespaces/{ns}/placementmemories"


def _days_ago(days: float) -> str:
    moment = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def _only_memory(kube, ns, written: bool = False) -> dict | None:
    """The namespace's one PlacementMemory; `written`: once its status is (written after the object)."""
    mems = await (o.written_memories if written else o.placement_memories)(kube, ns)
    return mems[0] if len(mems) == 1 else None


async def test_an_owner_quiet_for_four_days_survives_scale_to_zero_and_a_restart(kube, operator, ns):
    """Defect 1: the stored lastSeen was the last *write*. A workload that ran 4 days
    unchanged, then scaled to zero, was forgotten by the first sweep after a restart."""
    a, _, owner, ann = await o.rank_ran_on_a(kube, ns)
    # stopped before its status is written, the status patch below would meet an object without one
    mem = await o.eventually(lambda: _only_memory(kube, ns, written=True), what="PlacementMemory and its status written")
    operator.stop(kill=True)
    name = mem["metadata"]["name"]
    await kube.request(  # as if the last write was 4 days ago: nothing changed since
        "PATCH", f"{PMEM.format(ns=ns)}/{name}/status", body={"status": {"lastSeen": _days_ago(4)}},
        content_type="application/merge-patch+json",
    )
    operator.start()
    await o.delete_pod(kube, ns, "job-0")  # scaled to zero
    await asyncio.sleep(3)  # a flush or two
    operator.stop(kill=True)
    operator.start()
    await asyncio.sleep(12)  # two sweeps (HOMING_LIFETIMES__SWEEP_INTERVAL_SECONDS=5)
    kept = await _only_memory(kube, ns)
    assert kept is not None, "the owner's memory was forgotten after the restart"
    assert kept["status"]["lastSeen"] > _days_ago(1)
    again = await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    assert o.home(again) == a


async def _async(value):
    return value


@pytest.mark.parametrize("namespace_event_seen", [True, False], ids=["event-seen", "event-missed"])
async def test_a_deleted_namespace_takes_its_owners_along(kube, namespace_event_seen):
    """Defect 11: pods bound in a namespace deleted before the first write used to leave
    "PlacementMemory not written" every second for 72 h, the owner kept in memory."""
    ns = await o.namespace(kube, f"gone-{o.short_id()}")
    rt = Runtime(Settings(), store=Store(kube))
    rt.cluster.observe_namespace("ADDED", await kube.request("GET", f"/api/v1/namespaces/{ns}"))
    a = await o.node(kube, f"a-{ns}")
    owner = await o.owner_stand_in(kube, ns, "job")
    await o.pod(kube, ns, "job-0", owner=owner, annotations={"volcano.sh/task-index": "0"})
    await o.bind(kube, ns, "job-0", a)
    rt.pods.observe("ADDED", await o.get_pod(kube, ns, "job-0"))
    key = f"{ns}/{owner['uid']}"
    assert key in rt.index.dirty
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    if namespace_event_seen:
        rt.cluster.observe_namespace("MODIFIED", await kube.request("GET", f"/api/v1/namespaces/{ns}"))
        assert rt.index.owner(key) is None, "a terminating namespace takes its owners at once"
    errors = metrics.STORE_ERRORS._value.get()
    await upkeep.flush_once(rt.index, rt.store)
    assert rt.index.owner(key) is None and key not in rt.index.dirty
    await upkeep.flush_once(rt.index, rt.store)
    assert metrics.STORE_ERRORS._value.get() == errors, "no write tried, none failed"


class _TimesOutOnce(Kube):
    """The real client; its first DELETE gets a deadline no API server can meet."""

    armed = True

    async def request(self, method, path, *args, **kwargs):
        if method == "DELETE" and self.armed:
            self.armed = False
            kwargs["timeout"] = 0.000001
        return await super().request(method, path, *args, **kwargs)


async def test_the_sweeper_survives_an_api_timeout_and_deletes_what_it_left(kubeconfig, kube, ns):
    """Defect 2: one asyncio.TimeoutError out of the sweeper's delete ended sweeping for
    the life of the process. Now the loop lives on, and the delete is tried again."""
    flaky = _TimesOutOnce((await Kube.connect(str(kubeconfig))).api)
    settings = Settings(lifetimes={"ttl_seconds": 2, "sweep_interval_seconds": 0.3})
    index, store = MemoryIndex(), Store(flaky)
    old, newer = await owner_ref(kube, ns, "old"), await owner_ref(kube, ns, "newer")
    now = time.time()
    for ref, seen in ((old, now - 60), (newer, now - 1)):  # `newer` expires a sweep or two later
        index.record_bind(ref, "0", f"n-{ref.name}", (), seen)
        index.owner(ref.key).last_seen = seen
    await store.flush(index)
    assert len(await o.placement_memories(kube, ns)) == 2
    errors = metrics.STORE_ERRORS._value.get()
    sup = Supervisor()
    sup.spawn("sweep", Sweeper(index, store, settings).forever)
    try:
        await o.eventually(lambda: _none_left(kube, ns), timeout=20, what="both PlacementMemories deleted")
        assert not flaky.armed and metrics.STORE_ERRORS._value.get() > errors, "the delete timed out once"
        assert sup.loops["sweep"].failures == 0 and sup.problems() == []
    finally:
        await sup.close()
        await flaky.close()


async def _none_left(kube, ns) -> bool:
    return await o.placement_memories(kube, ns) == []


async def owner_ref(kube, ns: str, name: str) -> OwnerRef:
    """A real owner: the garbage collector deletes a PlacementMemory whose owner does not exist."""
    ref = await o.owner_stand_in(kube, ns, name)
    return OwnerRef(api_version="v1", kind="ConfigMap", name=name, namespace=ns, uid=ref["uid"])
