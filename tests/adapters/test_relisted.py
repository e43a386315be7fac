"""After a re-list, cluster objects the listing lacks are handed over as deleted (behaviour.md "Operation"):
a node deleted while the node watch was away must not stay in the snapshot."""
from __future__ import annotations

from homing.config import Settings
from homing.operator.cluster import ClusterState
from homing.operator.startup import Relisted


def node(name: str, uid: str) -> dict:
    return {"metadata": {"name": name, "uid": uid, "labels": {}}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_a_node_missing_from_the_relist_leaves_the_snapshot():
    cluster = ClusterState(Settings())
    watch = Relisted(cluster.observe_node)
    for name, uid in (("n1", "u1"), ("n2", "u2")):
        watch(None, node(name, uid))
    watch.listed({"u1", "u2"})
    assert set(cluster.snapshot.nodes) == {"n1", "n2"}
    watch(None, node("n1", "u1"))  # the re-list after a 410: n2 was deleted meanwhile
    watch.listed({"u1"})
    assert set(cluster.snapshot.nodes) == {"n1"}
    assert watch.known == {"u1": {"name": "n1", "uid": "u1"}}


def test_a_namespace_missing_from_the_relist_is_no_longer_opted_in():
    cluster = ClusterState(Settings())
    watch = Relisted(cluster.observe_namespace)
    watch(None, {"metadata": {"name": "ai", "uid": "ns1", "labels": {"homing.io/enabled": "true"}}})
    assert cluster.opted_in == {"ai"}
    watch.listed(set())
    assert cluster.opted_in == set()
