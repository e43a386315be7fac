"""After a re-list, cluster objects the listing lacks are handed over as deleted (behaviour.md "Operation"):
a node deleted while the node watch was away must not stay in the snapshot."""
from __future__ import annotations

from homing.config import Settings
from homing.kube.state.cluster import ClusterState
from homing.kube.watch.watches import CLUSTER_KINDS, Watched

KINDS = {k.name: k for k in CLUSTER_KINDS}


def node(name: str, uid: str) -> dict:
    return {"metadata": {"name": name, "uid": uid, "labels": {}, "resourceVersion": "7"}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def listing(w: Watched, *objs: dict) -> None:
    w.begin(judging=True)
    for o in objs:
        w.listed(o)
    w.end({o["metadata"]["uid"] for o in objs}, now=0.0)


def test_a_node_missing_from_the_relist_leaves_the_snapshot():
    cluster = ClusterState(Settings())
    watch = Watched(KINDS["nodes"], cluster.observe_node)
    listing(watch, node("n1", "u1"), node("n2", "u2"))
    assert set(cluster.snapshot.nodes) == {"n1", "n2"}
    listing(watch, node("n1", "u1"))  # the re-list after the watch was away: n2 was deleted meanwhile
    assert set(cluster.snapshot.nodes) == {"n1"}
    assert set(watch.ledger.applied) == {"u1"}


def test_a_node_the_watch_added_during_the_relist_stays():
    cluster = ClusterState(Settings())
    watch = Watched(KINDS["nodes"], cluster.observe_node)
    listing(watch, node("n1", "u1"))
    watch.begin(judging=True)
    late = node("n3", "u3")
    late["metadata"]["resourceVersion"] = "9"
    watch.event("ADDED", late)  # made after the listing's snapshot (version 8)
    watch.listed(node("n1", "u1"))
    watch.end({"u1"}, now=0.0, version="8")
    assert set(cluster.snapshot.nodes) == {"n1", "n3"}


def test_a_namespace_missing_from_the_relist_is_no_longer_opted_in():
    cluster = ClusterState(Settings())
    watch = Watched(KINDS["namespaces"], cluster.observe_namespace)
    watch.event(None, {"metadata": {"name": "ai", "uid": "ns1", "resourceVersion": "3",
                                    "labels": {"homing.io/enabled": "true"}}})
    assert cluster.opted_in == {"ai"}
    listing(watch)
    assert cluster.opted_in == set()


def test_kopfs_own_listing_after_the_load_asks_for_a_relist_and_its_repeats_are_dropped():
    cluster = ClusterState(Settings())
    seen = []
    watch = Watched(KINDS["nodes"], lambda event, obj: seen.append(event) or cluster.observe_node(event, obj))
    watch.event(None, node("n1", "u1"))  # kopf's first listing, before the load: no re-list wanted
    assert not watch.relist_wanted.is_set()
    listing(watch, node("n1", "u1"))
    assert seen == [None]  # the load's copy of n1 repeats what kopf handed over
    watch.event(None, node("n1", "u1"))  # kopf lists again (an expired version)
    assert watch.relist_wanted.is_set() and seen == [None]
