"""behaviour.md "Topology"/5.3 topology sources: MindCluster's resource-level-config, Volcano HyperNodes,
MindCluster's per-node ConfigMaps, and TopologySources keeping the snapshot in step."""
from __future__ import annotations

import json

import pytest

from homing.config import Settings, Topology
from homing.engine.cluster.topology.hypernodes import hypernode_topology
from homing.engine.cluster.topology.mindcluster import DEVICE_INFO_PREFIX, NODE_INFO_PREFIX, device_info_ids, node_of, noded_health
from homing.engine.cluster.topology.resource_levels import parse_resource_levels
from homing.engine.cluster.topology.sources import TopologySources
from homing.engine.model import DomainExpr, Health

from .helpers import node_obj

H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY

# -- resource-level-config ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, trees",
    [
        pytest.param(None, {}, id="none"),
        pytest.param("", {}, id="empty"),
        pytest.param('{"default": {"level1": {"label": "a/l1"}, "level2": {"label": "a/l2"}}}',
                     {"default": (("level1", "a/l1"), ("level2", "a/l2"))}, id="one-tree"),
        pytest.param('{"t": {"level10": {"label": "j"}, "level2": {"label": "b"}, "level1": {"label": "a"}}}',
                     {"t": (("level1", "a"), ("level2", "b"), ("level10", "j"))}, id="sorted-by-level-number"),
        pytest.param('{"default": {"level1": {"label": "a"}}, "big": {"level1": {"label": "b1"}, "level2": {"label": "b2"}}}',
                     {"default": (("level1", "a"),), "big": (("level1", "b1"), ("level2", "b2"))}, id="two-trees"),
        pytest.param('{"t": {"level1": {"label": "a", "extra": 1}}}', {"t": (("level1", "a"),)}, id="extra-fields-ignored"),
        pytest.param('{"t": {}}', {"t": ()}, id="empty-tree"),
    ],
)
def test_resource_levels_valid(config, trees):
    assert parse_resource_levels(config) == (trees, None)


@pytest.mark.parametrize(
    "config, needle",
    [
        pytest.param("{not json", "not JSON", id="malformed-json"),
        pytest.param('[{"level1": {"label": "a"}}]', "must map tree names", id="top-level-list"),
        pytest.param('"default"', "must map tree names", id="top-level-string"),
        pytest.param('{"default": ["level1"]}', "'default' must map level names", id="tree-a-list"),
        pytest.param('{"default": {"lvl1": {"label": "a"}}}', "'lvl1'", id="bad-level-name"),
        pytest.param('{"default": {"level0": {"label": "a"}}}', "'level0'", id="level-zero"),
        pytest.param('{"default": {"level01": {"label": "a"}}}', "'level01'", id="level-leading-zero"),
        pytest.param('{"default": {"level1": "a"}}', "'level1'", id="level-not-an-object"),
        pytest.param('{"default": {"level1": {}}}', "'level1'", id="label-missing"),
        pytest.param('{"default": {"level1": {"label": ""}}}', "'level1'", id="label-empty"),
        pytest.param('{"default": {"level1": {"label": 7}}}', "'level1'", id="label-not-a-string"),
        pytest.param('{"ok": {"level1": {"label": "a"}}, "bad": {"level1": {}}}', "'bad'", id="one-bad-tree-spoils-all"),
    ],
)
def test_resource_levels_malformed(config, needle):
    trees, warning = parse_resource_levels(config)
    assert trees == {}
    assert warning is not None and "resource-level-config" in warning and needle in warning


# -- HyperNodes ------------------------------------------------------------------------------------


def hypernode(name: str, tier, *members: dict) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": list(members)}}


def exact(name: str, kind: str = "Node") -> dict:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def regex(pattern: str, kind: str = "Node") -> dict:
    return {"type": kind, "selector": {"regexMatch": {"pattern": pattern}}}


def by_labels(match_labels: dict | None = None, expressions: list | None = None) -> dict:
    selector: dict = {}
    if match_labels is not None:
        selector["matchLabels"] = match_labels
    if expressions is not None:
        selector["matchExpressions"] = expressions
    return {"type": "Node", "selector": {"labelMatch": selector}}


def expr(key: str, op: str, *values: str) -> dict:
    return {"key": key, "operator": op, "values": list(values)}


LEAF = "net.example.com/leaf"
NODES = {
    "n1": {LEAF: "0", "zone": "a"},
    "n2": {LEAF: "0", "zone": "a"},
    "n10": {LEAF: "1", "zone": "b"},
    "n11": {LEAF: "1"},
    "gpu-x": {"zone": "c"},
}


def t(*pairs) -> tuple:
    return tuple((f"tier{tier}", name) for tier, name in pairs)


PATHS = [
    pytest.param([hypernode("hn", 1, exact("n1"), exact("n10"), exact("missing"))],
                 {"n1": t((1, "hn")), "n10": t((1, "hn"))}, 1, id="exact-match-unknown-name-ignored"),
    pytest.param([hypernode("hn", 1, regex("n[12]"))], {"n1": t((1, "hn")), "n2": t((1, "hn"))}, 1,
                 id="regex-full-match-only"),
    pytest.param([hypernode("hn", 1, regex("n1.*"))], {"n1": t((1, "hn")), "n10": t((1, "hn")), "n11": t((1, "hn"))}, 1,
                 id="regex-prefix"),
    pytest.param([hypernode("hn", 1, regex("(unclosed"))], {}, 1, id="bad-regex-matches-nothing"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "1"}))], {"n10": t((1, "hn")), "n11": t((1, "hn"))}, 1,
                 id="label-match"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "0", "zone": "a"}))], {"n1": t((1, "hn")), "n2": t((1, "hn"))}, 1,
                 id="label-match-two-labels"),
    pytest.param([hypernode("hn", 1, by_labels(expressions=[expr("zone", "In", "b", "c")]))],
                 {"n10": t((1, "hn")), "gpu-x": t((1, "hn"))}, 1, id="label-expression-in"),
    pytest.param([hypernode("hn", 1, by_labels(expressions=[expr(LEAF, "Exists"), expr("zone", "DoesNotExist")]))],
                 {"n11": t((1, "hn"))}, 1, id="label-expression-exists-doesnotexist"),
    pytest.param([hypernode("hn", 1, by_labels(expressions=[expr("zone", "NotIn", "a")]))],
                 {"n10": t((1, "hn")), "n11": t((1, "hn")), "gpu-x": t((1, "hn"))}, 1, id="label-expression-notin"),
    pytest.param([hypernode("hn", 1, by_labels({}))], {}, 1, id="empty-label-selector-selects-nothing"),
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("leaf-1", 1, by_labels({LEAF: "1"})),
                  hypernode("spine", 2, exact("leaf-0", "HyperNode"), exact("leaf-1", "HyperNode"))],
                 {"n1": t((1, "leaf-0"), (2, "spine")), "n2": t((1, "leaf-0"), (2, "spine")),
                  "n10": t((1, "leaf-1"), (2, "spine")), "n11": t((1, "leaf-1"), (2, "spine"))}, 2,
                 id="tier2-of-hypernodes"),
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("leaf-1", 1, by_labels({LEAF: "1"})),
                  hypernode("spine", 2, regex("leaf-.*", "HyperNode")), hypernode("core", 3, exact("spine", "HyperNode"))],
                 {"n1": t((1, "leaf-0"), (2, "spine"), (3, "core")), "n2": t((1, "leaf-0"), (2, "spine"), (3, "core")),
                  "n10": t((1, "leaf-1"), (2, "spine"), (3, "core")), "n11": t((1, "leaf-1"), (2, "spine"), (3, "core"))},
                 3, id="three-tiers-regex-hypernode-members"),
    pytest.param([hypernode("leaf-0", 1, exact("n1")), hypernode("spine", 2, exact("leaf-0", "HyperNode"), exact("n11"))],
                 {"n1": t((1, "leaf-0"), (2, "spine")), "n11": t((2, "spine"))}, 2, id="tier2-with-a-node-member"),
    pytest.param([hypernode("leaf-0", 1, exact("n1")), hypernode("spine", 2, by_labels({LEAF: "0"}))],
                 {"n1": t((1, "leaf-0"), (2, "spine")), "n2": t((2, "spine"))}, 2,
                 id="hypernode-member-not-matched-by-label-selector"),
    pytest.param([hypernode("hn", 0, exact("n1")), hypernode("ok", 2, exact("n2"))], {"n2": t((2, "ok"))}, 2,
                 id="tier-zero-ignored"),
    pytest.param([], {}, 0, id="no-hypernodes"),
]


@pytest.mark.parametrize("raw, paths, max_tier", PATHS)
def test_hypernode_paths(raw, paths, max_tier):
    topo = hypernode_topology(raw, NODES)
    assert topo.paths == paths
    assert topo.max_tier == max_tier


@pytest.mark.parametrize(
    "raw, warned",
    [
        pytest.param([hypernode("hn", 0, exact("n1"))], "spec.tier", id="tier-zero"),
        pytest.param([hypernode("hn", "2", exact("n1"))], "spec.tier", id="tier-a-string"),
        pytest.param([hypernode("", 1, exact("n1"))], "spec.tier", id="no-name"),
    ],
)
def test_hypernode_bad_tier_warns(raw, warned):
    topo = hypernode_topology(raw, NODES)
    assert (topo.paths, topo.max_tier) == ({}, 0)
    assert len(topo.warnings) == 1 and warned in topo.warnings[0]


def test_node_in_two_hypernodes_of_a_tier_first_by_name_kept():
    raw = [hypernode("zz", 1, exact("n1"), exact("n2")), hypernode("aa", 1, exact("n1"))]
    topo = hypernode_topology(raw, NODES)
    assert topo.paths == {"n1": t((1, "aa")), "n2": t((1, "zz"))}
    assert len(topo.warnings) == 1
    assert all(word in topo.warnings[0] for word in ("'n1'", "'aa'", "'zz'"))


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param([hypernode("a", 2, exact("b", "HyperNode"), exact("n1")),
                      hypernode("b", 2, exact("a", "HyperNode"), exact("n2"))], id="two-cycle"),
        pytest.param([hypernode("a", 3, exact("b", "HyperNode")), hypernode("b", 3, exact("c", "HyperNode")),
                      hypernode("c", 3, exact("a", "HyperNode"), exact("n1"))], id="three-cycle"),
    ],
)
def test_cycle_warns_not_crashes(raw):
    topo = hypernode_topology(raw, NODES)
    assert any("contains itself" in w for w in topo.warnings)
    assert set(topo.paths) <= set(NODES)


def test_self_member_is_not_a_cycle():
    topo = hypernode_topology([hypernode("a", 2, regex(".*", "HyperNode")), hypernode("leaf", 1, exact("n1"))], NODES)
    assert topo.warnings == []
    assert topo.paths == {"n1": t((1, "leaf"), (2, "a"))}


SELECTORS = [
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"}))],
                 {("tier1", "leaf-0"): DomainExpr(LEAF, ("0",))}, id="single-label"),
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("leaf-1", 1, by_labels({LEAF: "1"})),
                  hypernode("spine", 2, exact("leaf-1", "HyperNode"), exact("leaf-0", "HyperNode"))],
                 {("tier1", "leaf-0"): DomainExpr(LEAF, ("0",)), ("tier1", "leaf-1"): DomainExpr(LEAF, ("1",)),
                  ("tier2", "spine"): DomainExpr(LEAF, ("0", "1"))}, id="tier2-union-of-children"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "0"}), by_labels({LEAF: "1"}))],
                 {("tier1", "hn"): DomainExpr(LEAF, ("0", "1"))}, id="two-members-same-key"),
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("zone-b", 1, by_labels({"zone": "b"})),
                  hypernode("spine", 2, exact("leaf-0", "HyperNode"), exact("zone-b", "HyperNode"))],
                 {("tier1", "leaf-0"): DomainExpr(LEAF, ("0",)), ("tier1", "zone-b"): DomainExpr("zone", ("b",))},
                 id="children-different-keys-no-selector"),
    pytest.param([hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("odd", 1, exact("n11")),
                  hypernode("spine", 2, exact("leaf-0", "HyperNode"), exact("odd", "HyperNode"))],
                 {("tier1", "leaf-0"): DomainExpr(LEAF, ("0",))}, id="child-without-selector-no-selector"),
    pytest.param([hypernode("hn", 1, exact("n1"))], {}, id="exact-match-no-selector"),
    pytest.param([hypernode("hn", 1, regex("n.*"))], {}, id="regex-no-selector"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "0", "zone": "a"}))], {}, id="two-labels-no-selector"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "0"}, [expr("zone", "In", "a")]))], {},
                 id="label-and-expression-no-selector"),
    pytest.param([hypernode("hn", 1, by_labels({LEAF: "0"}), exact("n11"))], {}, id="mixed-members-no-selector"),
]


@pytest.mark.parametrize("raw, selectors", SELECTORS)
def test_hypernode_selectors(raw, selectors):
    assert hypernode_topology(raw, NODES).selectors == selectors


# -- MindCluster ConfigMaps ------------------------------------------------------------------------


def configmap(name: str, key: str, payload) -> dict:
    data = {} if payload is None else {key: payload if isinstance(payload, str) else json.dumps(payload)}
    return {"metadata": {"name": name, "namespace": "kube-system"}, "data": data}


def device_info(payload) -> dict:
    return configmap("mindx-dl-deviceinfo-n1", "DeviceInfoCfg", payload)


def node_info(payload) -> dict:
    return configmap("mindx-dl-nodeinfo-n1", "NodeInfo", payload)


@pytest.mark.parametrize(
    "payload, ids",
    [
        pytest.param({"SuperPodID": 3, "RackID": 12}, ("3", "12"), id="ints"),
        pytest.param({"SuperPodID": "3", "RackID": "0"}, ("3", "0"), id="string-ints-and-zero"),
        pytest.param({"SuperPodID": -1, "RackID": "-1"}, (None, None), id="negative-means-none"),
        pytest.param({"SuperPodID": 7}, ("7", None), id="rack-missing"),
        pytest.param({}, (None, None), id="both-missing"),
        pytest.param({"SuperPodID": "x", "RackID": None}, (None, None), id="garbage-values"),
        pytest.param({"SuperPodID": 2, "RackID": 5, "DeviceInfo": {"DeviceList": {}}}, ("2", "5"), id="other-fields"),
    ],
)
def test_device_info_ids(payload, ids):
    assert device_info_ids(device_info(payload)) == ids


@pytest.mark.parametrize(
    "cm",
    [
        pytest.param(device_info(None), id="no-key"),
        pytest.param(device_info("{bad json"), id="bad-json"),
        pytest.param(device_info("[1, 2]"), id="json-list"),
        pytest.param({"metadata": {"name": "mindx-dl-deviceinfo-n1"}}, id="no-data"),
    ],
)
def test_device_info_bad_input_raises_value_error(cm):
    with pytest.raises(ValueError):
        device_info_ids(cm)


@pytest.mark.parametrize(
    "payload, health",
    [
        pytest.param({"NodeStatus": "Healthy"}, H, id="healthy"),
        pytest.param({"NodeStatus": "PreSeparate"}, S, id="pre-separate"),
        pytest.param({"NodeStatus": "SubHealthy"}, S, id="sub-healthy"),
        pytest.param({"NodeStatus": "UnHealthy"}, U, id="unhealthy"),
        pytest.param({"NodeStatus": "Rebooting"}, None, id="unknown-status"),
        pytest.param({"NodeStatus": "unhealthy"}, None, id="case-sensitive"),
        pytest.param({}, None, id="no-status"),
        pytest.param({"NodeInfo": {"NodeStatus": "UnHealthy"}}, U, id="nested-node-info"),
    ],
)
def test_noded_health(payload, health):
    assert noded_health(node_info(payload)) is health


@pytest.mark.parametrize(
    "cm",
    [pytest.param(node_info(None), id="no-key"), pytest.param(node_info("nope"), id="bad-json"),
     pytest.param(node_info("3"), id="json-number")],
)
def test_noded_bad_input_raises_value_error(cm):
    with pytest.raises(ValueError):
        noded_health(cm)


@pytest.mark.parametrize(
    "name, prefix, node",
    [
        pytest.param("mindx-dl-deviceinfo-node-7", DEVICE_INFO_PREFIX, "node-7", id="device-info"),
        pytest.param("mindx-dl-nodeinfo-n1", NODE_INFO_PREFIX, "n1", id="node-info"),
        pytest.param("mindx-dl-nodeinfo-", NODE_INFO_PREFIX, None, id="prefix-only"),
        pytest.param("kube-root-ca.crt", NODE_INFO_PREFIX, None, id="other-configmap"),
        pytest.param("mindx-dl-deviceinfo-n1", NODE_INFO_PREFIX, None, id="other-prefix"),
    ],
)
def test_node_of(name, prefix, node):
    assert node_of({"metadata": {"name": name}}, prefix) == node


# -- TopologySources -----------------------------------------------------------------------------

RACK, SP = "homing.io/rack-id", "homing.io/superpod-id"


def sources(resource_levels: str | None = None) -> TopologySources:
    return TopologySources(Settings(topology=Topology(resource_level_config=resource_levels)))


def with_npus(node: dict, count: str) -> dict:
    node["status"]["allocatable"] = {"cpu": "192", "huawei.com/Ascend910": count}
    return node


def members(src: TopologySources) -> dict:
    return {domain: sorted(names) for domain, names in src.snapshot.members.items()}


def test_nodes_come_and_go():
    src = sources()
    old, new = src.node_changed(with_npus(node_obj("n1", labels={RACK: "r1", SP: "s1"}), "16"))
    assert old is None
    assert (new.name, new.health, new.topology, new.npus) == ("n1", H, (("rack", "r1"), ("superPod", "s1")), 16)
    assert new.keys == (("rack", RACK), ("superPod", SP))
    src.node_changed(node_obj("n2", ready="False", labels={RACK: "r1", SP: "s1"}))
    src.node_changed(node_obj("n3", labels={SP: "s2"}))
    assert members(src) == {("rack", "r1"): ["n1", "n2"], ("superPod", "s1"): ["n1", "n2"], ("superPod", "s2"): ["n3"]}
    assert src.snapshot.unhealthy == {"n2"}

    removed = src.node_deleted("n2")
    assert removed is not None and removed.name == "n2"
    assert members(src) == {("rack", "r1"): ["n1"], ("superPod", "s1"): ["n1"], ("superPod", "s2"): ["n3"]}
    assert src.snapshot.unhealthy == set()
    assert src.snapshot.health("n2") is Health.GONE

    assert src.node_deleted("n3").name == "n3"
    assert ("superPod", "s2") not in src.snapshot.members, "an empty domain is dropped"
    assert src.node_deleted("never-seen") is None


@pytest.mark.parametrize(
    "before, after, expected",
    [
        pytest.param({SP: "s1"}, {SP: "s2"}, {("superPod", "s2"): ["n1", "other"], ("superPod", "s1"): ["stay"]},
                     id="moves-super-pod"),
        pytest.param({SP: "s1", RACK: "r1"}, {SP: "s1"}, {("superPod", "s1"): ["n1", "stay"], ("superPod", "s2"): ["other"]},
                     id="rack-label-removed"),
        pytest.param({SP: "s1"}, {}, {("superPod", "s1"): ["stay"], ("superPod", "s2"): ["other"]}, id="all-labels-removed"),
    ],
)
def test_label_change_moves_node_between_domains(before, after, expected):
    src = sources()
    src.node_changed(node_obj("stay", labels={SP: "s1"}))
    src.node_changed(node_obj("other", labels={SP: "s2"}))
    src.node_changed(node_obj("n1", labels=before))
    src.node_changed(node_obj("n1", labels=after))
    assert members(src) == expected


@pytest.mark.parametrize(
    "node, health",
    [
        pytest.param(node_obj("n1", ready="False"), U, id="not-ready"),
        pytest.param(node_obj("n1", taints=["node.kubernetes.io/unreachable"]), U, id="unreachable-taint"),
        pytest.param(node_obj("n1", unschedulable=True), Health.UNAVAILABLE, id="cordoned"),
        pytest.param(node_obj("n1", labels={"homing.io/fault": "x"}), U, id="fault-label"),
        pytest.param(node_obj("n1", labels={"homing.io/sub-healthy": "x"}), S, id="sub-health-label"),
    ],
)
def test_health_changes_keep_unhealthy_set(node, health):
    src = sources()
    src.node_changed(node_obj("n1", labels={SP: "s1"}))
    assert src.snapshot.unhealthy == set()
    src.node_changed(node)
    assert src.snapshot.health("n1") is health
    assert src.snapshot.unhealthy == ({"n1"} if health is U else set())
    src.node_changed(node_obj("n1", labels={SP: "s1"}))
    assert (src.snapshot.health("n1"), src.snapshot.unhealthy) == (H, set())


def test_noded_verdict_makes_node_unhealthy_and_back():
    src = sources()
    src.node_changed(node_obj("n1"))
    src.noded_changed("n1", U)
    assert (src.snapshot.health("n1"), src.snapshot.unhealthy) == (U, {"n1"})
    src.noded_changed("n1", S)
    assert (src.snapshot.health("n1"), src.snapshot.unhealthy) == (S, set())
    src.noded_changed("n1", None)
    assert src.snapshot.health("n1") is H
    src.node_changed(node_obj("n1", ready="False"))
    src.noded_changed("n1", H)
    assert src.snapshot.health("n1") is U, "a healthy verdict does not hide a NotReady node"


def test_noded_verdict_before_the_node_applies_when_it_arrives():
    src = sources()
    src.noded_changed("n9", U)
    assert "n9" not in src.snapshot.nodes
    src.node_changed(node_obj("n9"))
    assert src.snapshot.unhealthy == {"n9"}
    src.node_changed(node_obj("n9", labels={SP: "s1"}))
    assert src.snapshot.unhealthy == {"n9"}, "a node update keeps NodeD's verdict"


def leaf_hypernodes() -> list[dict]:
    return [hypernode("leaf-0", 1, by_labels({LEAF: "0"})), hypernode("leaf-1", 1, by_labels({LEAF: "1"})),
            hypernode("spine", 2, exact("leaf-0", "HyperNode"), exact("leaf-1", "HyperNode"))]


def test_hypernodes_repath_nodes():
    src = sources()
    src.node_changed(node_obj("n1", labels={LEAF: "0", SP: "s1"}))
    src.node_changed(node_obj("n2", labels={LEAF: "1"}))
    for hn in leaf_hypernodes():
        src.hypernode_changed(hn)
    snap = src.snapshot
    assert snap.topology("n1") == (("superPod", "s1"), ("tier1", "leaf-0"), ("tier2", "spine"))
    assert snap.topology("n2") == (("tier1", "leaf-1"), ("tier2", "spine"))
    assert snap.max_tier == 2
    assert snap.selectors[("tier2", "spine")] == DomainExpr(LEAF, ("0", "1"))
    assert members(src)[("tier2", "spine")] == ["n1", "n2"]

    # leaf-1 now takes its nodes by name: no selector for it nor for the spine
    src.hypernode_changed(hypernode("leaf-1", 1, exact("n2")))
    assert set(snap.selectors) == {("tier1", "leaf-0")}
    assert snap.topology("n2") == (("tier1", "leaf-1"), ("tier2", "spine"))

    src.hypernode_changed(hypernode("spine", 2), deleted=True)
    assert snap.max_tier == 1
    assert snap.topology("n1") == (("superPod", "s1"), ("tier1", "leaf-0"))
    assert ("tier2", "spine") not in snap.members

    src.hypernode_changed(hypernode("leaf-0", 1), deleted=True)
    src.hypernode_changed(hypernode("leaf-1", 1), deleted=True)
    assert (snap.topology("n1"), snap.topology("n2"), snap.max_tier, snap.selectors) == (
        (("superPod", "s1"),), (), 0, {})


def test_node_label_change_moves_it_between_hypernodes():
    src = sources()
    for hn in leaf_hypernodes():
        src.hypernode_changed(hn)
    src.node_changed(node_obj("n1", labels={LEAF: "0"}))
    assert src.snapshot.topology("n1") == (("tier1", "leaf-0"), ("tier2", "spine"))
    src.node_changed(node_obj("n1", labels={LEAF: "1"}))
    assert src.snapshot.topology("n1") == (("tier1", "leaf-1"), ("tier2", "spine"))
    assert members(src) == {("tier1", "leaf-1"): ["n1"], ("tier2", "spine"): ["n1"]}
    src.node_changed(node_obj("n1", labels={}))
    assert src.snapshot.topology("n1") == ()
    assert members(src) == {}


def test_hypernode_warnings_returned():
    src = sources()
    src.node_changed(node_obj("n1"))
    warnings = src.hypernode_changed(hypernode("b", 1, exact("n1")))
    assert warnings == []
    warnings = src.hypernode_changed(hypernode("a", 1, exact("n1")))
    assert len(warnings) == 1 and "'n1'" in warnings[0]
    assert src.snapshot.topology("n1") == (("tier1", "a"),)


LEVELS = json.dumps({
    "default": {"level1": {"label": "topo/l1"}, "level2": {"label": "topo/l2"}},
    "big": {"level1": {"label": "big/l1"}},
})


@pytest.mark.parametrize(
    "labels, path, keys",
    [
        pytest.param({"topo/l1": "g1", "topo/l2": "G", "big/l1": "x"}, (("level1", "g1"), ("level2", "G")),
                     (("level1", "topo/l1"), ("level2", "topo/l2")), id="default-tree"),
        pytest.param({"huawei.com/topotree": "big", "topo/l1": "g1", "big/l1": "x"}, (("level1", "x"),),
                     (("level1", "big/l1"),), id="named-tree"),
        pytest.param({"huawei.com/topotree": "unknown", "topo/l1": "g1"}, (), (), id="unknown-tree-no-levels"),
        pytest.param({RACK: "r", SP: "s", "topo/l2": "G"}, (("rack", "r"), ("superPod", "s"), ("level2", "G")),
                     (("rack", RACK), ("superPod", SP), ("level2", "topo/l2")), id="after-rack-and-super-pod"),
    ],
)
def test_multilevel_labels_follow_the_topotree(labels, path, keys):
    src = sources(LEVELS)
    _, state = src.node_changed(node_obj("n1", labels=labels))
    assert (state.topology, state.keys) == (path, keys)
    assert src.warnings == []


def test_topotree_change_moves_levels():
    src = sources(LEVELS)
    src.node_changed(node_obj("n1", labels={"topo/l1": "g1", "big/l1": "x"}))
    assert members(src) == {("level1", "g1"): ["n1"]}
    src.node_changed(node_obj("n1", labels={"huawei.com/topotree": "big", "topo/l1": "g1", "big/l1": "x"}))
    assert members(src) == {("level1", "x"): ["n1"]}
    assert src.snapshot.domain_expr("level1", "x", "kubernetes.io/hostname") == DomainExpr("big/l1", ("x",))


def test_malformed_resource_levels_warn_and_give_no_levels():
    src = sources("{oops")
    assert len(src.warnings) == 1 and "not JSON" in src.warnings[0]
    _, state = src.node_changed(node_obj("n1", labels={"topo/l1": "g1", SP: "s"}))
    assert state.topology == (("superPod", "s"),)


# -- the (old, new) pair the runtime counts node health with ---------------------------------------

@pytest.mark.parametrize("label, hypernodes", [(LEAF, True), (SP, False)], ids=["with-hypernodes", "labels-only"])
@pytest.mark.parametrize("relabelled", [False, True], ids=["new-node", "relabelled-and-not-ready"])
def test_node_changed_returns_previous_state(label, hypernodes, relabelled):
    src = sources()
    if hypernodes:
        src.hypernode_changed(hypernode("leaf-0", 1, by_labels({LEAF: "0"})))
    before = src.node_changed(node_obj("n1", labels={label: "0"}))[1] if relabelled else None
    second = node_obj("n1", ready="False", labels={label: "1"}) if relabelled else node_obj("n1", labels={label: "0"})
    old, new = src.node_changed(second)
    assert old == before
    assert new == src.snapshot.nodes["n1"]
    assert (new.health != before.health) if relabelled else old is None
