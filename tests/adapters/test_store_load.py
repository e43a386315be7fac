"""behaviour.md "Memory", the loader: any object it cannot read is skipped with a warning and the
others load (one bad object must not keep the operator from becoming ready), objects in
the earlier form still load, shards merge, and the listing is read a page at a time."""
from __future__ import annotations

import asyncio
import copy

import pytest
from structlog.testing import capture_logs

from homing.engine.memory.index import MemoryIndex
from homing.kube.store import loader as loader_module
from homing.kube.store.store import Store
from homing.placementmemory import legacy_status, resource_body, resource_name

from .test_store_writes import FakeKube, assert_same_memory, big_owner, dirty_index, errors_total, small_owner


def legacy_object(mem) -> dict:
    """An object as homing wrote it before the compact form."""
    body = resource_body(mem.owner)
    body["metadata"]["namespace"] = mem.owner.namespace
    body["status"] = legacy_status(mem).model_dump(mode="json", by_alias=True, exclude_none=True)
    return body


def with_rank(obj: dict, key: str) -> dict:
    obj = copy.deepcopy(obj)
    obj["status"]["ranks"][0]["rank"] = key
    return obj


async def test_objects_in_the_earlier_form_still_load():
    kube, mem = FakeKube(), big_owner(ranks=300, name_len=253)
    kube.put(legacy_object(mem))
    index = MemoryIndex()
    assert await Store(kube).load(index) == 1
    assert_same_memory(index.owner(mem.owner.key), mem)


async def test_a_write_replaces_the_earlier_form():
    kube, mem = FakeKube(), small_owner()
    kube.put(legacy_object(mem))
    store, index = Store(kube), MemoryIndex()
    await store.load(index)
    index.dirty.add(mem.owner.key)
    await store.flush(index)
    (obj,) = kube.stored()
    assert "ranks" not in obj["status"] and obj["status"]["rankRows"]
    again = MemoryIndex()
    await Store(kube).load(again)
    assert_same_memory(again.owner(mem.owner.key), mem)


def superscript_rank(mem) -> dict:
    """Valid for the CRD's schema; `"²".isdigit()` is True and `int("²")` raises."""
    return with_rank(legacy_object(mem), "worker/²")


def row_naming_a_missing_node(mem) -> dict:
    obj = legacy_object(mem)
    obj["status"] = {k: v for k, v in obj["status"].items() if k not in ("ranks", "pool")}
    obj["status"].update(epoch=1_800_000_000, nodes="a", rankRows="0:n7 b0")
    return obj


def not_a_number(mem) -> dict:
    obj = row_naming_a_missing_node(mem)
    obj["status"]["rankRows"] = "0:n٣ b0"  # int() reads Arabic-Indic digits
    return obj


def wrong_name(mem) -> dict:
    obj = legacy_object(mem)
    obj["metadata"]["name"] = "hand-made"
    return obj


@pytest.mark.parametrize("bad", [superscript_rank, row_naming_a_missing_node, not_a_number, wrong_name])
async def test_an_object_the_loader_cannot_read_is_skipped_and_the_others_load(bad):
    """Before: `worker/²` raised out of the loader and the start-up handler failed every 60 s."""
    kube = FakeKube()
    broken, good = small_owner(uid="uid-bad"), small_owner(uid="uid-good")
    kube.put(bad(broken))
    kube.put(legacy_object(good))
    index, before = MemoryIndex(), errors_total()
    with capture_logs() as logs:
        assert await Store(kube).load(index) == 1
    assert list(index.owners) == [good.owner.key]
    assert errors_total() == before + 1
    (warning,) = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"].startswith("PlacementMemory skipped") and warning["namespace"] == "ns"


@pytest.mark.parametrize("status", [None, {}])
async def test_an_object_not_yet_written_is_skipped_quietly(status):
    """The writer creates, then writes the status: an object listed in between (or left by a
    writer that died there) held nothing, so it costs neither a warning nor a store error.
    (Before, it was counted as unreadable and a reader's decode raised on it.)"""
    kube, empty, good = FakeKube(), small_owner(uid="uid-empty"), small_owner(uid="uid-good")
    created = legacy_object(empty)
    created.pop("status")
    if status is not None:
        created["status"] = status
    kube.put(created)
    kube.put(legacy_object(good))
    index, before = MemoryIndex(), errors_total()
    with capture_logs() as logs:
        assert await Store(kube).load(index) == 1
    assert list(index.owners) == [good.owner.key]
    assert errors_total() == before
    assert not [entry for entry in logs if entry["log_level"] == "warning"]
    assert any(entry["event"] == "PlacementMemory not yet written, skipped" for entry in logs)


async def test_an_owner_the_index_cannot_adopt_is_skipped():
    kube, first, second = FakeKube(), small_owner(uid="uid-a"), small_owner(uid="uid-b")
    for mem in (first, second):
        kube.put(legacy_object(mem))

    class Picky(MemoryIndex):
        def adopt(self, mem):
            if mem.owner.uid == "uid-a":
                raise RuntimeError("cannot adopt")
            super().adopt(mem)

    index = Picky()
    assert await Store(kube).load(index) == 1
    assert list(index.owners) == [second.owner.key]


async def test_shards_merge_and_leftovers_are_ignored():
    """A shard numbered past the primary's count is left from a write that stopped before
    deleting it; shards without their primary are an owner reset by hand."""
    kube, mem = FakeKube(), big_owner(name_len=253)
    await Store(kube).flush(dirty_index(mem))
    count = len(kube.objects)
    leftover = copy.deepcopy(kube.stored()[-1])
    leftover["metadata"]["name"] = f"{resource_name(mem.owner)}-{count + 1}"
    leftover["status"]["shard"]["index"] = count + 1
    leftover["status"]["rankRows"] = leftover["status"]["rankRows"].replace("worker/", "ghost/")
    kube.put(leftover)
    orphan = small_owner(uid="uid-orphan")
    await Store(kube).flush(dirty_index(big_owner(name_len=253, uid="uid-orphan")))
    del kube.objects[("ns", resource_name(orphan.owner))]
    index, store = MemoryIndex(), Store(kube)
    assert await store.load(index) == count
    assert list(index.owners) == [mem.owner.key]
    assert_same_memory(index.owner(mem.owner.key), mem)
    index.dirty.add(mem.owner.key)
    await store.flush(index)
    assert len([o for o in kube.stored() if o["status"]["owner"]["uid"] == "uid-big"]) == count, "leftover deleted"


async def test_the_listing_is_read_a_page_at_a_time(monkeypatch):
    """Before: every page was joined into one list (500 objects a page, up to 1.5 MiB each)."""
    kube = FakeKube()
    for i in range(7):
        kube.put(legacy_object(small_owner(uid=f"uid-{i}")))
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    monkeypatch.setattr(loader_module, "LOAD_PAGE", 3, raising=False)
    task = asyncio.create_task(ticker())
    try:
        index = MemoryIndex()
        assert await Store(kube).load(index) == 7
    finally:
        task.cancel()
    assert kube.limits == [3, 3, 3]
    assert len(index.owners) == 7 and ticks >= 7, "the loop ran between objects"


async def test_page_size_bounds_start_up_memory():
    assert getattr(loader_module, "LOAD_PAGE", 500) <= 100


async def test_missing_crd_fails_loudly():
    kube = FakeKube()
    from homing.kube.client import KubeError
    kube.fail = lambda method, path: KubeError(404, "404 page not found")
    with pytest.raises(RuntimeError, match="CRD is not installed"):
        await Store(kube).load(MemoryIndex())
