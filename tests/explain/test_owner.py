"""explain_owner from PlacementMemory objects exactly as the store writes them (compact
rows, sharded when large), no cluster."""
from __future__ import annotations

import pytest

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.model import OwnerRef
from homing.explain import explain_owner
from homing.explain.owner import NoMemory, home_rate, rank_order
from homing.placementmemory import encode, resource_body, snapshot

NOW = 1_800_000_000.0
HOUR = 3600.0


def owner(name: str = "llama", uid: str = "uid-1", kind: str = "Job") -> OwnerRef:
    return OwnerRef(api_version="batch.volcano.sh/v1alpha1", kind=kind, name=name, namespace="ai", uid=uid)


def objects(mem: OwnerMemory, budget: int | None = None) -> list[dict]:
    """The objects the store would write for this memory."""
    encoded = encode(snapshot(mem), budget) if budget else encode(snapshot(mem))
    return [{**resource_body(mem.owner, n), "status": s} for n, s in enumerate(encoded.statuses, 1)]


def memory(ranks: int = 3, **kw) -> OwnerMemory:
    entries = {f"worker/{i}": RankEntry(node=f"node-{i}", bound_at=NOW - 600, warm=i % 2 == 0) for i in range(ranks)}
    return OwnerMemory(owner=kw.pop("ref", owner()), last_seen=NOW - 60, ranks=entries, **kw)


def test_where_each_rank_goes_back_to():
    mem = memory(12)
    mem.ranks["worker/1"].previous_node = "node-old"
    x = explain_owner(objects(mem), "job", "llama", NOW, HOUR)
    assert [r.rank for r in x.ranks] == [f"worker/{i}" for i in range(12)]  # 10 after 9
    assert {r.rank: r.node for r in x.ranks} == {f"worker/{i}": f"node-{i}" for i in range(12)}
    assert x.ranks[1].previous_node == "node-old" and x.ranks[0].warm and not x.ranks[1].warm
    assert (x.owner, x.namespace, x.uid) == ("Job/llama", "ai", "uid-1")


def test_fault_nodes_are_avoided_only_inside_the_fault_memory():
    mem = memory(3)
    mem.ranks["worker/0"].faults = [FaultMark("node-bad", NOW - 60), FaultMark("node-old", NOW - 2 * HOUR)]
    mem.ranks["worker/2"].faults = [FaultMark("node-bad", NOW - 120)]
    x = explain_owner(objects(mem), "Job", "llama", NOW, HOUR)
    assert x.fault_nodes == {"node-bad": ["worker/0", "worker/2"]}
    assert [(f.node, f.avoided) for f in x.ranks[0].faults] == [("node-bad", True), ("node-old", False)]


@pytest.mark.parametrize(
    "stats, rate",
    [(Stats(), None), (Stats(admitted=12, home=9, domain=2, elsewhere=1), 0.75), (Stats(admitted=4, home=4), 1.0),
     (Stats(admitted=3, elsewhere=3), 0.0)],
)
def test_home_rate(stats, rate):
    x = explain_owner(objects(memory(2, stats=stats)), "Job", "llama", NOW, HOUR)
    assert x.home_rate == rate and x.stats["admitted"] == stats.admitted
    assert home_rate(x.stats) == rate


def test_a_sharded_owner_is_merged():
    mem = memory(400)
    items = objects(mem, budget=4000)
    assert len(items) > 3  # the small budget splits it, as a large owner is split for real
    x = explain_owner(items[::-1], "Job", "llama", NOW, HOUR)
    assert len(x.ranks) == 400 and len(x.objects) == len(items)


def test_a_rankless_owners_pool():
    ref = owner("chat", "uid-9", "Deployment")
    mem = OwnerMemory(owner=ref, last_seen=NOW, pool={"n1": PoolEntry(NOW - 10, True), "n2": PoolEntry(NOW - 5)})
    x = explain_owner(objects(mem), "deployment", "chat", NOW, HOUR)
    assert [(p.node, p.warm) for p in x.pool] == [("n2", False), ("n1", True)]  # most recent first
    assert x.ranks == []


def test_other_owners_and_unreadable_objects_are_left_out():
    mine = objects(memory(2))
    other = objects(memory(5, ref=owner("other", "uid-2")))
    broken = {**resource_body(owner("llama", "uid-3"), 1), "status": {"owner": "not an owner"}}
    x = explain_owner([*other, broken, *mine], "Job", "llama", NOW, HOUR)
    assert len(x.ranks) == 2 and len(x.unreadable) == 1 and x.unreadable[0].startswith(broken["metadata"]["name"])


def test_an_owner_recreated_under_its_name_shows_the_newest_memory():
    old = memory(4, ref=owner(uid="uid-old"))
    old.last_seen = NOW - 10 * HOUR
    x = explain_owner([*objects(old), *objects(memory(2))], "Job", "llama", NOW, HOUR)
    assert x.uid == "uid-1" and len(x.ranks) == 2 and x.earlier_owners == ["uid-old"]


@pytest.mark.parametrize(
    "kind, name, items",
    [
        ("Job", "nobody", objects(memory(2))),
        ("StatefulSet", "llama", objects(memory(2))),  # same name, other kind
        ("Job", "llama", []),
        ("Job", "llama", objects(memory(400), budget=4000)[1:]),  # shards without their primary
    ],
)
def test_no_memory(kind, name, items):
    with pytest.raises(NoMemory):
        explain_owner(items, kind, name, NOW, HOUR)


def test_rank_order():
    keys = ["b/10", "b/9", "a/2", "10", "9", "a/10"]
    assert sorted(keys, key=rank_order) == ["9", "10", "a/2", "a/10", "b/9", "b/10"]
