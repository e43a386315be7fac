"""behaviour.md "Memory" on a real API server and etcd: an owner at the per-owner bound is written
under 1 MiB an object and loads back whole; a write the API server refuses is retried
with backoff; an owner whose namespace was deleted is reported gone; an object the
loader cannot read is skipped and the others load."""
from __future__ import annotations

import asyncio
import json
import time

import pytest
from structlog.testing import capture_logs

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.kube.client import MERGE_PATCH, KubeError
from homing.kube.store.store import Store
from homing.placementmemory import legacy_status, resource_body, resource_name
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

MIB = 1024 * 1024
NOW = float(int(time.time()))


class Counting:
    """The real client, counting requests by method."""

    def __init__(self, kube) -> None:
        self.kube, self.calls = kube, []

    async def request(self, method, path, **kw):
        self.calls.append(method)
        return await self.kube.request(method, path, **kw)


async def stand_in(kube, ns: str, name: str) -> OwnerRef:
    """A ConfigMap owner, so that the garbage collector keeps its PlacementMemory."""
    ref = await o.owner_stand_in(kube, ns, name)
    return OwnerRef(api_version="v1", kind="ConfigMap", name=name, namespace=ns, uid=ref["uid"])


def node(i: int, tag: str = "n") -> str:
    return f"{tag}{i:05d}-rack-0042-superpod-0007-xyz"[:40]  # 40 characters, each its own


def at_the_bound(owner: OwnerRef, ranks: int = 8192) -> OwnerMemory:
    entries = {
        f"worker/{i}": RankEntry(
            node=node(i), bound_at=NOW - 3600 - i, warm=i % 3 != 0,
            topology=(("rack", f"r{i // 8}"), ("superPod", f"sp{i // 64}")),
            previous_node=node(i + 1) if i % 4 == 0 else None,
            faults=[FaultMark(node=node(i, "f"), at=NOW - 60)],
        )
        for i in range(ranks)
    }
    return OwnerMemory(owner=owner, last_seen=NOW, ranks=entries, pool={node(1, "p"): PoolEntry(NOW, True)},
                       stats=Stats(12, 11, 1, 0))


def dirty(*mems: OwnerMemory) -> MemoryIndex:
    index = MemoryIndex()
    for mem in mems:
        index.adopt(mem)
        index.dirty.add(mem.owner.key)
    return index


async def stored(kube, ns: str) -> list[dict]:
    return await o.placement_memories(kube, ns)


async def test_owner_at_the_bound_is_written_under_one_mib_an_object_and_loads_back(kube, ns):
    owner = await stand_in(kube, ns, "llama-train")
    mem = at_the_bound(owner)
    index = dirty(mem)
    await Store(kube).flush(index)
    assert not index.dirty, "written"
    objects = await stored(kube, ns)
    sizes = [len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()) for obj in objects]
    assert objects and max(sizes) < MIB, sizes
    assert sum(obj["status"]["summary"]["ranks"] for obj in objects) == 8192
    assert all(obj["metadata"]["ownerReferences"][0]["uid"] == owner.uid for obj in objects)
    index = MemoryIndex()
    await Store(kube).load(index)
    back = index.owner(owner.key)
    assert back.ranks == mem.ranks and back.pool == mem.pool  # nodes, faults, topology, all
    assert (back.stats, back.last_seen) == (mem.stats, mem.last_seen)


async def test_refused_write_is_retried_with_backoff(kube, ns):
    """A status the schema refuses (422) is tried at 0 s and 2 s, not every flush."""
    owner = await stand_in(kube, ns, "refused")
    mem = at_the_bound(owner, ranks=3)
    mem.stats.home = -1  # the CRD says minimum 0
    counting = Counting(kube)
    store, index = Store(counting), dirty(mem)
    started = time.monotonic()
    with capture_logs() as logs:
        while time.monotonic() - started < 5:
            await store.flush(index)
            await asyncio.sleep(0.25)
    failures = [e for e in logs if e["event"] == "PlacementMemory not written"]
    assert len(failures) == 2, f"{len(failures)} attempts in 5 s"
    assert (failures[0]["status"], failures[0]["refused"], failures[0]["owner"]) == (422, True, owner.display)
    assert counting.calls.count("PATCH") == 2, counting.calls
    assert store.retries[owner.key].failures == 2
    mem.stats.home = 1
    store.retries[owner.key].not_before = 0  # fixed: the next turn writes it
    await store.flush(index)
    assert not index.dirty and owner.key not in store.retries


async def test_owner_whose_namespace_is_deleted_is_reported_gone(kube):
    ns = await o.namespace(kube, f"t-{o.short_id()}-gone")
    written = at_the_bound(await stand_in(kube, ns, "written"), ranks=2)
    store = Store(kube)
    assert await store.flush(dirty(written)) == []
    later = at_the_bound(await stand_in(kube, ns, "later"), ranks=2)
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}")
    assert await store.flush(dirty(later)) == [later.owner.key], "terminating: 403 on create"

    async def deleted():
        try:
            await kube.request("GET", f"/api/v1/namespaces/{ns}")
        except KubeError as err:
            return err.status == 404
        return False

    await o.eventually(deleted, timeout=90, what="namespace deleted")
    fresh = Store(kube)
    assert await fresh.flush(dirty(at_the_bound(later.owner, ranks=2))) == [later.owner.key], "deleted: 404 naming it"
    assert await store.flush(dirty(written)) == [written.owner.key], "its object went with it"


async def test_an_object_the_loader_cannot_read_is_skipped_and_the_others_load(kube, ns):
    good = at_the_bound(await stand_in(kube, ns, "good"), ranks=4)
    await Store(kube).flush(dirty(good))
    bad = at_the_bound(await stand_in(kube, ns, "bad"), ranks=1)
    body = resource_body(bad.owner)
    path = f"/apis/homing.io/v1alpha1/namespaces/{ns}/placementmemories"
    await kube.request("POST", path, body=body)
    status = legacy_status(bad).model_dump(mode="json", by_alias=True, exclude_none=True)
    status["ranks"][0]["rank"] = "worker/²"  # valid for the schema; int("²") raises
    await kube.request("PATCH", f"{path}/{resource_name(bad.owner)}/status", body={"status": status}, content_type=MERGE_PATCH)
    index = MemoryIndex()
    with capture_logs() as logs:
        await Store(kube).load(index)
    assert index.owner(good.owner.key).ranks == good.ranks
    assert index.owner(bad.owner.key) is None
    assert any(e["event"].startswith("PlacementMemory skipped") and e.get("name") == resource_name(bad.owner) for e in logs)
