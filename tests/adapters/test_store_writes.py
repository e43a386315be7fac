"""behaviour.md "Memory", the durable mirror's writes, against an in-process stand-in for the API
server: no object over 1 MiB at the per-owner bound, backoff after a failure, owners
whose namespace is gone handed back, nothing ever raised into the loops (behaviour.md "Operation"), and
encoding kept off the event loop (bench/store.py measures what stays on it)."""
from __future__ import annotations

import asyncio
import copy
import json
import threading

import aiohttp
import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from homing import placementmemory
from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import OwnerRef
from homing.kube.client import KubeError
from homing.kube.store import loader as loader_module, store as store_module
from homing.kube.store.store import Store
from homing.placementmemory import resource_name

MIB = 1024 * 1024
NOW = 1_800_000_000.0
COLLECTION = "/apis/homing.io/v1alpha1/placementmemories"


# -- a stand-in for the API server's PlacementMemory endpoints ---------------------------------

def _merge_patch(target: dict, patch: dict) -> dict:
    out = dict(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = _merge_patch(out.get(key) or {}, value)
        else:
            out[key] = value
    return out


def not_found(kind: str, name: str) -> KubeError:
    body = {"kind": "Status", "reason": "NotFound", "code": 404, "details": {"name": name, "kind": kind},
            "message": f'{kind} "{name}" not found'}
    return KubeError(404, json.dumps(body))


class FakeKube:
    """PlacementMemory objects in a dict, stored as JSON text like etcd stores them.
    `fail(method, path)` may return an exception to raise instead of answering."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], str] = {}
        self.calls: list[tuple[str, str]] = []
        self.limits: list[int] = []
        self.fail = lambda method, path: None

    def stored(self, namespace: str | None = None) -> list[dict]:
        return [json.loads(raw) for (ns, _), raw in sorted(self.objects.items()) if namespace in (None, ns)]

    def sizes(self) -> list[int]:
        return [len(raw.encode()) for raw in self.objects.values()]

    def put(self, obj: dict) -> None:
        meta = obj["metadata"]
        self.objects[(meta["namespace"], meta["name"])] = json.dumps(obj, separators=(",", ":"))

    async def request(self, method, path, body=None, query=None, content_type="application/json", timeout=30,
                      accept="application/json"):
        self.calls.append((method, path))
        await asyncio.sleep(0)
        err = self.fail(method, path)
        if err is not None:
            raise err
        if path == COLLECTION:
            return self._list(dict(query or []))
        parts = path.split("/")  # '', apis, group, version, namespaces, ns, plural[, name[, status]]
        namespace, name = parts[5], (parts[7] if len(parts) > 7 else None)
        if method == "POST":
            return self._create(namespace, copy.deepcopy(body))
        if (namespace, name) not in self.objects:
            raise not_found("placementmemories.homing.io", name)
        if method == "DELETE":
            del self.objects[(namespace, name)]
            return {}
        obj = json.loads(self.objects[(namespace, name)])
        obj["status"] = _merge_patch(obj.get("status") or {}, json.loads(json.dumps(body))["status"])
        self.put(obj)
        return obj

    def _create(self, namespace: str, body: dict) -> dict:
        body["metadata"]["namespace"] = namespace
        if (namespace, body["metadata"]["name"]) in self.objects:
            raise KubeError(409, "AlreadyExists")
        self.put(body)
        return body

    def _list(self, query: dict) -> dict:
        limit, start = int(query.get("limit", 500)), int(query.get("continue") or 0)
        self.limits.append(limit)
        items = self.stored()[start:start + limit]
        more = start + limit < len(self.objects)
        return {"items": items, "metadata": {"continue": str(start + limit) if more else ""}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def errors_total() -> float:
    return REGISTRY.get_sample_value("homing_store_errors_total") or 0.0


# -- memories -------------------------------------------------------------------------------------

def node_name(i: int, length: int, tag: str = "n") -> str:
    """A distinct DNS-subdomain node name of exactly `length` characters."""
    head = f"{tag}{i:05d}."
    labels = ".".join(["x" * 62] * 5)
    return (head + labels)[:length].rstrip(".").ljust(length, "y")


def big_owner(ranks: int = 8192, name_len: int = 40, fault_every: int = 1, namespace: str = "ns",
              uid: str = "uid-big", pool: int = 0) -> OwnerMemory:
    """An owner at the per-owner bound: each rank on its own node, with a topology path,
    a previous node, and (every `fault_every`-th rank) a fault mark on yet another node."""
    owner = OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind="Job", name="llama-train", namespace=namespace, uid=uid)
    entries = {}
    for i in range(ranks):
        faults = [FaultMark(node=node_name(i, name_len, "f"), at=NOW - 60)] if fault_every and i % fault_every == 0 else None
        entries[f"worker/{i}"] = RankEntry(
            node=node_name(i, name_len), bound_at=NOW - 3600 - i, warm=i % 3 != 0,
            topology=(("rack", f"r{i // 8}"), ("superPod", f"sp{i // 64}")),
            previous_node=node_name(i + 1, name_len) if i % 4 == 0 else None,
            faults=faults, group=f"part-{i // 1024}",
        )
    homes = {node_name(i, name_len, "p"): PoolEntry(last_used=NOW - i, warm=i % 2 == 0) for i in range(pool)}
    return OwnerMemory(owner=owner, last_seen=NOW, ranks=entries, pool=homes, stats=Stats(10, 7, 2, 1))


def small_owner(namespace: str = "ns", uid: str = "uid-small", ranks: int = 2) -> OwnerMemory:
    return big_owner(ranks=ranks, namespace=namespace, uid=uid)


def dirty_index(*mems: OwnerMemory) -> MemoryIndex:
    index = MemoryIndex()
    for mem in mems:
        index.adopt(mem)
        index.dirty.add(mem.owner.key)
    return index


def assert_same_memory(back: OwnerMemory, mem: OwnerMemory) -> None:
    assert back.owner == mem.owner and back.stats == mem.stats and back.last_seen == mem.last_seen
    assert back.ranks == mem.ranks  # nodes, bind times, warm, previous nodes, topology, groups, faults
    assert back.pool == mem.pool


# -- size -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name_len", [40, 253])
async def test_no_object_over_one_mib_at_the_owner_bound(name_len):
    """8,192 ranks, each on its own node with a fault mark on another: 2.6 MB in one object
    before, which etcd refuses. Now every object stays under 1 MiB and reads back whole."""
    kube, mem = FakeKube(), big_owner(name_len=name_len)
    index = dirty_index(mem)
    assert await Store(kube).flush(index) == []
    assert not index.dirty, "written"
    assert kube.objects and max(kube.sizes()) < MIB, sorted(kube.sizes())
    again = MemoryIndex()
    await Store(kube).load(again)
    assert_same_memory(again.owner(mem.owner.key), mem)


async def test_forty_character_names_cost_under_100_bytes_a_rank():
    """The follow-up's target: at most 100 bytes a rank in etcd, node names included
    (each rank on its own 40-character node, with its topology; 1% with a fault mark)."""
    kube = FakeKube()
    await Store(kube).flush(dirty_index(big_owner(name_len=40, fault_every=100)))
    assert sum(kube.sizes()) / 8192 <= 100, sum(kube.sizes()) / 8192


async def test_pool_homes_share_the_bound():
    kube, mem = FakeKube(), big_owner(ranks=10, pool=8192, name_len=253)
    await Store(kube).flush(dirty_index(mem))
    assert len(kube.objects) > 1 and max(kube.sizes()) < MIB
    again = MemoryIndex()
    await Store(kube).load(again)
    assert_same_memory(again.owner(mem.owner.key), mem)


async def test_shrinking_owner_deletes_the_shards_it_no_longer_needs():
    kube, mem = FakeKube(), big_owner(name_len=253)
    store = Store(kube)
    await store.flush(dirty_index(mem))
    assert len(kube.objects) >= 3
    for key in list(mem.ranks)[10:]:
        mem.drop_rank(key)
    await store.flush(dirty_index(mem))
    assert [o["metadata"]["name"] for o in kube.stored()] == [resource_name(mem.owner)]
    assert kube.stored()[0]["status"]["shard"] == {"index": 1, "count": 1}


async def test_primary_is_written_last_and_counts_its_shards():
    """A write that stops halfway leaves the primary as it was: its count still names the
    shards of the last whole write."""
    kube, mem = FakeKube(), big_owner(name_len=253)
    await Store(kube).flush(dirty_index(mem))
    patched = [path.split("/")[-2] for method, path in kube.calls if method == "PATCH"]
    assert patched[-1] == resource_name(mem.owner)
    assert sorted(patched[:-1]) == sorted(f"{resource_name(mem.owner)}-{n}" for n in range(2, len(patched) + 1))
    primary = [o for o in kube.stored() if o["metadata"]["name"] == resource_name(mem.owner)][0]
    assert primary["status"]["shard"] == {"index": 1, "count": len(patched)} and primary["status"]["stats"]["home"] == 7
    assert sum(o["status"]["summary"]["ranks"] for o in kube.stored()) == 8192


# -- failures: backoff, never raise ------------------------------------------------------------------

def refuse_patches(status: int = 422):
    return lambda method, path: KubeError(status, '{"reason": "Invalid"}') if method == "PATCH" else None


async def flush_for(store: Store, index: MemoryIndex, clock: Clock, seconds: int) -> None:
    """Flush once a second for `seconds` seconds of the store's clock."""
    for _ in range(seconds):
        await store.flush(index)
        clock.now += 1


async def test_refused_write_is_reported_and_retried_with_backoff():
    """Before: a 4xx was retried every flush (each second) forever."""
    kube, mem, clock = FakeKube(), small_owner(), Clock()
    kube.fail = refuse_patches(422)
    store = Store(kube)
    store.clock = clock
    index, before = dirty_index(mem), errors_total()
    with capture_logs() as logs:
        await flush_for(store, index, clock, 60)
    patches = [c for c in kube.calls if c[0] == "PATCH"]
    assert len(patches) == 5, "tried at 0, 2, 6, 14 and 30 s: 2 s doubling"
    assert errors_total() - before == 5
    assert index.dirty == {mem.owner.key}, "still to be written"
    line = [entry for entry in logs if entry["event"] == "PlacementMemory not written"][-1]
    assert (line["owner"], line["status"], line["refused"], line["retry_in"]) == (mem.owner.display, 422, True, 32.0)


async def test_backoff_is_capped_at_five_minutes():
    kube, mem, clock = FakeKube(), small_owner(), Clock()
    kube.fail = refuse_patches(400)
    store = Store(kube)
    store.clock = clock
    index = dirty_index(mem)
    await flush_for(store, index, clock, 3600)
    patches = [c for c in kube.calls if c[0] == "PATCH"]
    assert len(patches) == 19, len(patches)  # at 0, 2, 6, ... 510 s (9), then every 300 s (10)


async def test_a_successful_write_resets_the_backoff():
    kube, mem, clock = FakeKube(), small_owner(), Clock()
    kube.fail = refuse_patches(500)
    store = Store(kube)
    store.clock = clock
    index = dirty_index(mem)
    await flush_for(store, index, clock, 15)  # failures at 0, 2, 6, 14
    kube.fail = lambda method, path: None
    await flush_for(store, index, clock, 20)  # written at 30
    assert not index.dirty and not store.retries
    kube.fail = refuse_patches(500)
    index.dirty.add(mem.owner.key)
    calls = len(kube.calls)
    await flush_for(store, index, clock, 3)
    assert len([c for c in kube.calls[calls:] if c[0] == "PATCH"]) == 2, "again after 2 s, not after 5 min"


@pytest.mark.parametrize("error", [
    TimeoutError(), aiohttp.ClientConnectionError("reset"), aiohttp.ServerDisconnectedError(),
    KubeError(503, "unavailable"), RuntimeError("a bug"),
], ids=["timeout", "connection", "disconnected", "503", "bug"])
async def test_flush_never_raises_and_keeps_the_owner_dirty(error):
    kube, mem = FakeKube(), small_owner()
    kube.fail = lambda method, path: error
    index = dirty_index(mem, small_owner(uid="uid-other"))
    assert await Store(kube).flush(index) == []
    assert index.dirty == {mem.owner.key, f"{mem.owner.namespace}/uid-other"}


@pytest.mark.parametrize("error", [TimeoutError(), aiohttp.ClientConnectionError("reset"), KubeError(500, "x")],
                         ids=["timeout", "connection", "500"])
async def test_delete_never_raises(error):
    """Before: a TimeoutError out of delete ended the sweeper for the life of the process."""
    kube, mem = FakeKube(), small_owner()
    store = Store(kube)
    await store.flush(dirty_index(mem))
    kube.fail = lambda method, path: error if method == "DELETE" else None
    before = errors_total()
    await store.delete(mem.owner)
    assert errors_total() == before + 1
    kube.fail = lambda method, path: None
    await store.delete(mem.owner)
    assert kube.objects == {}


async def test_delete_takes_every_shard():
    kube, mem = FakeKube(), big_owner(name_len=253)
    store = Store(kube)
    await store.flush(dirty_index(mem))
    await store.delete(mem.owner)
    assert kube.objects == {}


async def test_cancelled_flush_leaves_the_unwritten_owners_dirty():
    kube, first, second = FakeKube(), small_owner(uid="uid-a"), small_owner(uid="uid-b")
    started = asyncio.Event()

    async def slow(method, path, **kw):
        started.set()
        await asyncio.sleep(10)

    kube.request = slow
    index = dirty_index(first, second)
    task = asyncio.create_task(Store(kube).flush(index))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert index.dirty == {first.owner.key, second.owner.key}


# -- namespace gone -------------------------------------------------------------------------------------

TERMINATING = KubeError(403, json.dumps({
    "kind": "Status", "reason": "Forbidden", "code": 403,
    "message": 'placementmemories.homing.io "x" is forbidden: unable to create new content in namespace ns '
               "because it is being terminated",
    "details": {"name": "x", "kind": "placementmemories", "causes": [{"reason": "NamespaceTerminating"}]},
}))


@pytest.mark.parametrize("refusal", [not_found("namespaces", "ns"), TERMINATING], ids=["deleted", "terminating"])
async def test_owner_whose_namespace_is_gone_is_reported_and_not_retried(refusal):
    """Before: 403/404 every second for 72 h, and flush returned nothing to act on."""
    kube, mem, other = FakeKube(), small_owner(), small_owner(namespace="alive", uid="uid-alive")
    kube.fail = lambda method, path: refusal if method == "POST" and "/namespaces/ns/" in path else None
    store = Store(kube)
    index = dirty_index(mem, other)
    assert await store.flush(index) == [mem.owner.key]
    assert index.dirty == set(), "not retried"
    assert [o["metadata"]["namespace"] for o in kube.stored()] == ["alive"]
    posts = len([c for c in kube.calls if c[0] == "POST"])
    index.dirty.add(mem.owner.key)  # changed again before the caller forgot it
    assert await store.flush(index) == [mem.owner.key]
    assert len([c for c in kube.calls if c[0] == "POST"]) == posts, "never tried again"


async def test_existing_object_in_a_deleted_namespace_is_reported_gone():
    """The object went with its namespace: PATCH 404, then the create names the namespace."""
    kube, mem = FakeKube(), small_owner()
    store = Store(kube)
    await store.flush(dirty_index(mem))
    kube.objects.clear()
    kube.fail = lambda method, path: not_found("namespaces", "ns") if method == "POST" else None
    index = dirty_index(mem)
    assert await store.flush(index) == [mem.owner.key]


async def test_missing_crd_is_not_a_gone_namespace():
    kube, mem = FakeKube(), small_owner()
    kube.fail = lambda method, path: KubeError(404, "404 page not found") if method == "POST" else None
    index = dirty_index(mem)
    assert await Store(kube).flush(index) == []
    assert index.dirty == {mem.owner.key}


async def test_forgotten_owner_can_be_written_again():
    kube, mem = FakeKube(), small_owner()
    kube.fail = lambda method, path: TERMINATING if method == "POST" else None
    store = Store(kube)
    assert await store.flush(dirty_index(mem)) == [mem.owner.key]
    store.forgotten(mem.owner.key)
    kube.fail = lambda method, path: None
    assert await store.flush(dirty_index(mem)) == [] and kube.objects


async def test_outdated_crd_that_prunes_the_compact_fields_is_a_failure():
    kube, mem, clock = FakeKube(), small_owner(), Clock()
    real = kube.request

    async def pruning(method, path, body=None, **kw):
        answer = await real(method, path, body=body, **kw)
        return {**answer, "status": {k: v for k, v in (answer.get("status") or {}).items() if k == "owner"}}

    kube.request = pruning
    store = Store(kube)
    store.clock = clock
    index = dirty_index(mem)
    await store.flush(index)
    assert index.dirty and store.retries[mem.owner.key].failures == 1


# -- the event loop (behaviour.md "Operation") ------------------------------------------------------------------------

def spy_threads(monkeypatch, name: str, module=store_module) -> list[int]:
    """Record the thread each call of <module>.<name> runs in."""
    threads: list[int] = []
    real = getattr(placementmemory, name, None)  # absent before the compact form: never called

    def spy(*args, **kw):
        threads.append(threading.get_ident())
        return real(*args, **kw)

    monkeypatch.setattr(module, name, spy, raising=False)
    return threads


async def test_a_large_owner_is_encoded_off_the_event_loop(monkeypatch):
    """Before: to_status() for 8,192 ranks ran on the loop for 150-210 ms (342 ms here).
    Now the loop takes a snapshot (C-speed copies) and a worker thread encodes."""
    kube, mem = FakeKube(), big_owner(name_len=253)
    threads = spy_threads(monkeypatch, "encode")
    await Store(kube).flush(dirty_index(mem))
    assert kube.objects
    assert threads and threading.get_ident() not in threads


async def test_large_objects_are_decoded_off_the_event_loop(monkeypatch):
    kube, mem = FakeKube(), big_owner(name_len=253)
    await Store(kube).flush(dirty_index(mem))
    threads = spy_threads(monkeypatch, "read_object", loader_module)
    index = MemoryIndex()
    await Store(kube).load(index)
    assert index.owner(mem.owner.key) is not None
    assert threads and threading.get_ident() not in threads
