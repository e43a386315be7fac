"""behaviour.md "Memory": the PlacementMemory custom resource: round trip, names, validation of hand edits."""
from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from pydantic import ValidationError

from homing.engine.memory import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.memory.entries import rank_index
from homing.engine.model import OwnerRef
from homing.placementmemory import (
    MIB,
    STATUS_BUDGET,
    PlacementMemoryStatus,
    decode,
    encode,
    from_status,
    json_wire_size,
    legacy_status,
    merge,
    primary_owner_key,
    resource_body,
    resource_name,
    shard_name,
    snapshot,
)

from .helpers import NOW, memory, owner

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# -- round trip -------------------------------------------------------------------------------

epochs = st.floats(min_value=1_500_000_000, max_value=2_200_000_000, allow_nan=False, allow_infinity=False)
names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20)
topologies = st.lists(
    st.tuples(st.sampled_from(["rack", "superPod", "level1", "level2", "level3"]), st.text(min_size=1, max_size=5)),
    max_size=3, unique_by=lambda p: p[0],
).map(tuple)
rank_keys = st.one_of(st.integers(0, 10_000).map(str), st.tuples(names, st.integers(0, 99)).map(lambda t: f"{t[0]}/{t[1]}"))
# A Volcano task-spec is any annotation text: separators, escapes, newlines, non-ASCII.
odd_text = st.text(alphabet=st.sampled_from(list("ab:% =\n\t\"\\<>&é²/")), min_size=1, max_size=12)
odd_rank_keys = st.tuples(odd_text, st.integers(0, 99)).map(lambda t: f"{t[0]}/{t[1]}")
RANK_FIELDS = {f.name for f in fields(RankEntry)}
rank_entries = st.builds(
    RankEntry,
    node=names,
    bound_at=epochs,
    topology=st.one_of(topologies, st.lists(st.tuples(odd_text, odd_text), max_size=2, unique_by=lambda p: p[0]).map(tuple)),
    previous_node=st.one_of(st.none(), names),
    warm=st.booleans(),
    faults=st.one_of(st.none(), st.lists(st.builds(FaultMark, node=names, at=epochs), min_size=1, max_size=4)),
    # any further optional string field (the Volcano sub-group, say) must survive the trip too
    **{f: st.one_of(st.none(), names, odd_text) for f in RANK_FIELDS - {"node", "bound_at", "topology", "previous_node", "warm", "faults"}},
)
owners = st.builds(
    OwnerRef,
    api_version=st.sampled_from(["apps/v1", "batch/v1", "batch.volcano.sh/v1alpha1", "leaderworkerset.x-k8s.io/v1"]),
    kind=st.sampled_from(["StatefulSet", "Job", "Deployment", "LeaderWorkerSet", "AscendJob"]),
    name=names,
    namespace=names,
    uid=st.uuids().map(str),
)
memories = st.builds(
    OwnerMemory,
    owner=owners,
    last_seen=epochs,
    ranks=st.dictionaries(st.one_of(rank_keys, odd_rank_keys), rank_entries, max_size=8),
    pool=st.dictionaries(names, st.builds(PoolEntry, last_used=epochs, warm=st.booleans(),
                                          group=st.one_of(st.none(), names, odd_text)), max_size=5),
    stats=st.builds(Stats, admitted=st.integers(0, 10**9), home=st.integers(0, 10**9), domain=st.integers(0, 10**9),
                    elsewhere=st.integers(0, 10**9)),
)


def _same_second(original: float, restored: float) -> bool:
    """Stored at second resolution: a whole second, not after the original (but for float
    rounding of the microseconds) and less than a second before it."""
    return float(restored).is_integer() and -1e-3 < original - restored < 1


def _assert_round_trip(mem: OwnerMemory, back: OwnerMemory, pool_groups: bool = True) -> None:
    assert back.owner == mem.owner
    assert _same_second(mem.last_seen, back.last_seen)
    assert back.stats == mem.stats
    assert set(back.ranks) == set(mem.ranks)
    for key, e in mem.ranks.items():
        b = back.ranks[key]
        plain = RANK_FIELDS - {"bound_at", "faults"}
        assert {f: getattr(b, f) for f in plain} == {f: getattr(e, f) for f in plain}, key
        assert _same_second(e.bound_at, b.bound_at)
        assert (b.faults is None) == (e.faults is None)
        for fe, fb in zip(e.faults or (), b.faults or (), strict=True):
            assert fb.node == fe.node and _same_second(fe.at, fb.at)
    assert set(back.pool) == set(mem.pool)
    for node, p in mem.pool.items():
        assert back.pool[node].warm == p.warm and _same_second(p.last_used, back.pool[node].last_used)
        assert back.pool[node].group == (p.group if pool_groups else None)


def _wire(status: dict) -> PlacementMemoryStatus:
    """As the API server stores it: JSON, nulls dropped by the merge patch."""
    return PlacementMemoryStatus.model_validate(json.loads(json.dumps({k: v for k, v in status.items() if v is not None})))


def _objects(mem: OwnerMemory, budget: int) -> list:
    statuses = encode(snapshot(mem), budget).statuses
    return [decode(_wire(s), mem.owner.namespace, shard_name(mem.owner, n)) for n, s in enumerate(statuses, 1)]


@hsettings(max_examples=150, deadline=None)
@given(mem=memories)
def test_round_trip_through_the_compact_form(mem):
    """encode -> JSON (as the API server stores it) -> validate -> decode keeps everything."""
    (part,) = _objects(mem, STATUS_BUDGET)
    _assert_round_trip(mem, merge([part]))


@hsettings(max_examples=150, deadline=None)
@given(mem=memories, budget=st.integers(1500, 6000))
def test_round_trip_through_shards(mem, budget):
    """However small the objects, the owner's memory is the union of its shards, and
    no object is over its budget."""
    statuses = encode(snapshot(mem), budget).statuses
    assert all(json_wire_size(s) <= budget for s in statuses)
    assert all(len(json.dumps(s, ensure_ascii=False, separators=(",", ":")).encode()) <= json_wire_size(s) for s in statuses)
    _assert_round_trip(mem, merge(_objects(mem, budget)))


@hsettings(max_examples=60, deadline=None)
@given(mem=memories)
def test_round_trip_through_the_earlier_form(mem):
    """Objects written before the compact form still load."""
    wire = json.loads(json.dumps(legacy_status(mem).model_dump(mode="json", by_alias=True)))
    back = from_status(PlacementMemoryStatus.model_validate(wire), mem.owner.namespace)
    _assert_round_trip(mem, back, pool_groups=False)  # the earlier form had no pool groups


def test_status_field_names_and_summary():
    mem = memory(ranks={"0": "n0", "1": "n1"}, faults={"0": [("f1", NOW - 60)]}, pool={"p1": (NOW - 5, True)}, warm=["1"])
    mem.ranks["0"].previous_node = "old"
    mem.ranks["0"].topology = (("rack", "2"), ("superPod", "5"))
    (data,) = encode(snapshot(mem)).statuses
    assert data["owner"] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "work", "uid": mem.owner.uid}
    assert data["lastSeen"].startswith("2027-01-15T") and data["epoch"] == int(NOW)
    assert data["nodes"].split("\n") == ["n0", "old", "f1", "n1", "p1"]
    assert data["paths"] == "rack=2 superPod=5"
    assert data["rankRows"].split("\n") == ["0:n0 b0 p1 t0 f2@60", "1:n3 b0 w"]
    assert data["poolRows"] == "n4 u5 w"
    assert data["summary"] == {"ranks": 2, "warm": 1, "pool": 1}
    assert data["shard"] == {"index": 1, "count": 1} and data["stats"]["home"] == 0


def test_large_owner_is_split_and_only_the_primary_counts_stats():
    mem = memory(ranks={str(i): f"node-{i:04d}" for i in range(400)})
    statuses = encode(snapshot(mem), budget=4000).statuses
    assert len(statuses) > 1
    assert [s["shard"] for s in statuses] == [{"index": n, "count": len(statuses)} for n in range(1, len(statuses) + 1)]
    assert "stats" in statuses[0] and not any("stats" in s for s in statuses[1:])
    assert sum(s["summary"]["ranks"] for s in statuses) == 400


def test_an_entry_larger_than_an_object_is_dropped_not_written_oversize():
    mem = memory(ranks={"0": "n0", "x" * 5000 + "/1": "n1"})
    encoded = encode(snapshot(mem), budget=3000)
    assert encoded.dropped == ["x" * 5000 + "/1"]
    assert all(json_wire_size(s) <= 3000 for s in encoded.statuses)


def test_at_the_bound_every_object_is_under_one_mib():
    """8,192 ranks, 253-character node names, each with a previous node and a fault mark
    on nodes of their own: 9 MB of names, still no object near the limit."""
    def long(tag: str, i: int) -> str:
        return (f"{tag}{i:05d}." + "x" * 300)[:253]

    ranks = {
        f"worker/{i}": RankEntry(node=long("n", i), bound_at=NOW, topology=(("rack", str(i)), ("superPod", str(i // 8))),
                                 previous_node=long("p", i), warm=True, faults=[FaultMark(long("f", i), NOW)], group=long("g", i))
        for i in range(8192)
    }
    mem = OwnerMemory(owner=owner(), last_seen=NOW, ranks=ranks)
    statuses = encode(snapshot(mem)).statuses
    assert max(json_wire_size(s) for s in statuses) <= STATUS_BUDGET < MIB
    assert sum(s["summary"]["ranks"] for s in statuses) == 8192


def test_rank_index_reads_ascii_digits_only():
    """`"²".isdigit()` is True and `int("²")` raises: it stopped the loader."""
    assert rank_index("worker/²") == 0
    assert rank_index("worker/٣") == 0
    assert rank_index("worker/12") == 12


def test_decode_rejects_a_rank_homing_never_writes():
    status = PlacementMemoryStatus.model_validate(_edit(("ranks", 0, "rank"), "worker/²"))
    with pytest.raises(ValueError):
        decode(status, "ns")


@pytest.mark.parametrize("rows, nodes", [
    pytest.param("0:n1 b0", "a", id="node-out-of-table"),
    pytest.param("0:n-1 b0", "a", id="negative-node"),
    pytest.param("0:n٣ b0", "a", id="non-ascii-number"),
    pytest.param("0:b0", "a", id="no-node"),
    pytest.param("0:n0", "a", id="no-bind-time"),
    pytest.param("n0 b0", "a", id="no-rank"),
    pytest.param("0:n0 b0 f0", "a", id="fault-without-time"),
])
def test_decode_rejects_broken_rows(rows, nodes):
    status = PlacementMemoryStatus.model_validate({**GOOD, "ranks": [], "epoch": 0, "nodes": nodes, "rankRows": rows})
    with pytest.raises((ValueError, IndexError)):
        decode(status, "ns")


def test_decode_ignores_tags_of_a_later_version():
    status = PlacementMemoryStatus.model_validate({**GOOD, "ranks": [], "epoch": 100, "nodes": "a", "rankRows": "0:n0 b10 z9"})
    assert decode(status, "ns").ranks["0"] == RankEntry(node="a", bound_at=90.0)


def test_only_a_primary_stands_for_its_owner():
    """Deleting a shard homing no longer needs must not forget the owner's memory."""
    body = {"metadata": {"namespace": "ns", "name": "x"}, "status": {"owner": {"uid": "u"}}}
    assert primary_owner_key(body) == "ns/u"
    assert primary_owner_key({**body, "status": {"owner": {"uid": "u"}, "shard": {"index": 1, "count": 3}}}) == "ns/u"
    assert primary_owner_key({**body, "status": {"owner": {"uid": "u"}, "shard": {"index": 2, "count": 3}}}) is None
    assert primary_owner_key({"metadata": {"namespace": "ns"}}) is None


# -- resource names ---------------------------------------------------------------------------

LONG = "a" * 253


@pytest.mark.parametrize(
    "kind, name",
    [
        pytest.param("StatefulSet", "web", id="plain"),
        pytest.param("PyTorchJob", LONG, id="253-char-name"),
        pytest.param("Job", ("ab." * 84)[:253].rstrip("."), id="long-dotted"),
        pytest.param("Job", ("a-" * 126) + "b", id="long-dashes"),
        pytest.param("LeaderWorkerSet", "llama.v2.finetune", id="dots"),
        pytest.param("Job", "0123", id="digits"),
        pytest.param("Job", "x" * 238 + ".y", id="cut-at-a-dot"),
        pytest.param("Job", "x" * 227 + "-" * 20 + "y", id="cut-in-dashes"),
        pytest.param("Job", "UPPER_case name", id="odd-uppercase-underscore-space"),
        pytest.param("Job", "n\u00fcrnberg", id="odd-unicode"),
    ],
)
def test_resource_name_is_dns_subdomain(kind, name):
    got = resource_name(OwnerRef(api_version="v1", kind=kind, name=name, namespace="ns", uid="u-1"))
    assert len(got) <= 253
    assert DNS1123_SUBDOMAIN.match(got), got


dns_label = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
dns_subdomain = st.lists(dns_label, min_size=1, max_size=12).map(".".join).filter(lambda s: len(s) <= 253)


@hsettings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["StatefulSet", "Job", "PyTorchJob", "Deployment"]), name=dns_subdomain,
       uid=st.uuids().map(str))
def test_resource_name_valid_for_any_valid_owner_name(kind, name, uid):
    got = resource_name(OwnerRef(api_version="v1", kind=kind, name=name, namespace="ns", uid=uid))
    assert len(got) <= 253 and DNS1123_SUBDOMAIN.match(got), got


def test_resource_name_differs_by_uid():
    a = OwnerRef(api_version="v1", kind="Job", name="train", namespace="ns", uid="11111111-aaaa")
    b = a.model_copy(update={"uid": "22222222-bbbb"})
    assert resource_name(a) != resource_name(b)
    assert resource_name(a) == resource_name(a.model_copy())
    assert resource_name(a).startswith("job-train-")


def test_resource_body_is_owned_by_the_workload():
    ref = owner(kind="Job", name="train", api_version="batch/v1")
    body = resource_body(ref)
    assert (body["apiVersion"], body["kind"]) == ("homing.io/v1alpha1", "PlacementMemory")
    assert body["metadata"]["namespace"] == ref.namespace
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": ref.uid}
    ]


# -- validation of hand-edited objects ----------------------------------------------------------

GOOD = {
    "owner": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u"},
    "ranks": [{"rank": "0", "node": "n0", "boundAt": "2026-11-30T02:00:00Z", "warm": True,
               "faultNodes": [{"node": "n9", "at": "2026-11-30T01:00:00Z"}]}],
    "pool": [{"node": "n1", "lastUsed": "2026-11-30T02:00:00Z"}],
    "lastSeen": "2026-11-30T02:00:00Z",
    "stats": {"admitted": 1, "home": 1, "domain": 0, "elsewhere": 0},
}


def _edit(path, value):
    import copy
    data = copy.deepcopy(GOOD)
    obj = data
    for part in path[:-1]:
        obj = obj[part]
    if value is _DELETE:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return data


_DELETE = object()


def test_good_status_validates():
    status = PlacementMemoryStatus.model_validate(GOOD)
    mem = from_status(status, "ns")
    assert mem.ranks["0"].node == "n0" and mem.ranks["0"].faults[0].node == "n9"


@pytest.mark.parametrize(
    "path, value",
    [
        pytest.param(("stats", "admitted"), -1, id="negative-stat"),
        pytest.param(("stats", "home"), "many", id="stat-not-int"),
        pytest.param(("owner",), _DELETE, id="missing-owner"),
        pytest.param(("owner", "uid"), _DELETE, id="owner-missing-uid"),
        pytest.param(("owner",), "web", id="owner-a-string"),
        pytest.param(("lastSeen",), _DELETE, id="missing-last-seen"),
        pytest.param(("lastSeen",), "yesterday", id="last-seen-not-a-date"),
        pytest.param(("ranks",), "0:n0", id="ranks-not-a-list"),
        pytest.param(("ranks", 0, "node"), _DELETE, id="rank-missing-node"),
        pytest.param(("ranks", 0, "node"), ["n0"], id="rank-node-a-list"),
        pytest.param(("ranks", 0, "warm"), "maybe", id="warm-not-bool"),
        pytest.param(("ranks", 0, "boundAt"), None, id="bound-at-null"),
        pytest.param(("ranks", 0, "faultNodes", 0, "at"), "later", id="fault-at-not-a-date"),
        pytest.param(("pool", 0, "lastUsed"), _DELETE, id="pool-missing-last-used"),
        pytest.param(("summary",), {"ranks": -2}, id="negative-summary"),
    ],
)
def test_invalid_status_is_rejected(path, value):
    with pytest.raises(ValidationError):
        PlacementMemoryStatus.model_validate(_edit(path, value))


def test_empty_status_is_rejected():
    with pytest.raises(ValidationError):
        PlacementMemoryStatus.model_validate({})
