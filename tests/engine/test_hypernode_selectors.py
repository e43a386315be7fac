"""The two label selectors of a HyperNode job read alike: a sub-group's labelSelector (which
pods form the sub-group) and a HyperNode member's labelMatch (which nodes it holds) select
the same label sets, with Kubernetes' semantics, and never raise. They differ on purpose
only where there is no requirement at all: a sub-group policy without a selector covers
every pod, a labelMatch without one holds no node."""
from __future__ import annotations

import pytest

from homing.engine.cluster.topology.hypernodes import hypernode_topology
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.hypernode import subgroup

LABELS = {"role": "worker", "zone": "a", "replica": "0"}


def in_subgroup(selector: object, labels: dict = LABELS, present: bool = True) -> bool:
    policy: dict = {"name": "sg", "subGroupSize": 4, "matchLabelKeys": ["replica"]}
    if present:
        policy["labelSelector"] = selector
    group, _ = subgroup(JobFacts(group_spec={"subGroupPolicy": [policy]}, pod_labels=labels), 2)
    return group is not None


def in_hypernode(selector: object, labels: dict = LABELS) -> bool:
    member = {"type": "Node", "selector": {"labelMatch": selector}}
    topo = hypernode_topology([{"metadata": {"name": "hn"}, "spec": {"tier": 1, "members": [member]}}], {"n1": labels})
    return "n1" in topo.paths


def expr(key: object, op: object, *values: object) -> dict:
    return {"key": key, "operator": op, "values": list(values)}


# a selector with at least one requirement (or a malformed one) -> selected?
AGREED = [
    pytest.param({"matchLabels": {"role": "worker"}}, True, id="match-labels"),
    pytest.param({"matchLabels": {"role": "server"}}, False, id="match-labels-other-value"),
    pytest.param({"matchExpressions": [expr("zone", "In", "a", "b")]}, True, id="in"),
    pytest.param({"matchExpressions": [expr("gpu", "NotIn", "x")]}, True, id="notin-absent-label"),
    pytest.param({"matchExpressions": [expr("zone", "Exists")]}, True, id="exists"),
    pytest.param({"matchExpressions": [expr("zone", "DoesNotExist")]}, False, id="doesnotexist"),
    pytest.param({"matchLabels": {"role": "worker"}, "matchExpressions": [expr("zone", "NotIn", "a")]}, False,
                 id="labels-and-expression-both-needed"),
    pytest.param({"matchExpressions": [expr("zone", "Gt", "1")]}, False, id="unknown-operator"),
    pytest.param({"matchExpressions": [expr("zone", "in", "a")]}, False, id="operator-is-case-sensitive"),
    pytest.param({"matchLabels": {"role": "worker"}, "matchExpressions": [expr("zone", "Bogus")]}, False,
                 id="unknown-operator-spoils-the-selector"),
    pytest.param({"matchExpressions": [expr("zone", "NotIn")]}, False, id="notin-without-values"),
    pytest.param({"matchExpressions": [expr("zone", "Exists", "a")]}, False, id="exists-with-values"),
    pytest.param({"matchExpressions": [{"key": "zone", "operator": "In", "values": "ab"}]}, False,
                 id="values-a-string-not-a-list"),
    pytest.param({"matchExpressions": ["zone In a"]}, False, id="expression-a-string"),
    pytest.param({"matchExpressions": {"key": "zone", "operator": "Exists"}}, False, id="expressions-a-mapping"),
    pytest.param({"matchLabels": [["role", "worker"]]}, False, id="match-labels-a-list"),
    pytest.param({"matchLabels": {"replica": 0}}, False, id="label-value-not-a-string"),
    pytest.param({"matchExpressions": [expr(["zone"], "Exists")]}, False, id="key-unhashable"),
    pytest.param("role=worker", False, id="selector-a-string"),
]


@pytest.mark.parametrize("selector, selected", AGREED)
def test_subgroup_and_hypernode_selectors_agree(selector, selected):
    assert (in_subgroup(selector), in_hypernode(selector)) == (selected, selected)


@pytest.mark.parametrize("selector", [None, {}, {"matchLabels": {}}, {"matchLabels": {}, "matchExpressions": []}],
                         ids=["null", "empty", "empty-match-labels", "empty-both"])
def test_no_requirement_subgroup_covers_every_pod_hypernode_holds_no_node(selector):
    assert in_subgroup(selector) is True
    assert in_hypernode(selector) is False


def test_absent_subgroup_selector_covers_every_pod():
    assert in_subgroup(None, present=False) is True
