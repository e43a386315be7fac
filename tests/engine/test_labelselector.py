"""The engine's one label-selector matcher, against Kubernetes' LabelSelector semantics:
matchLabels AND matchExpressions; In, NotIn, Exists, DoesNotExist; an empty selector
selects everything, a null or malformed one nothing; nothing raises."""
from __future__ import annotations

import pytest

from homing.engine.cluster.labelselector import Requirement, is_empty, matches, requirements

LABELS = {"role": "worker", "zone": "a", "empty": ""}


def expr(key: object, op: object, *values: object) -> dict:
    return {"key": key, "operator": op, "values": list(values)}


def exprs(*items: object) -> dict:
    return {"matchExpressions": list(items)}


MATCHES = [
    # matchLabels
    pytest.param({"matchLabels": {"role": "worker"}}, True, id="label-equal"),
    pytest.param({"matchLabels": {"role": "worker", "zone": "a"}}, True, id="two-labels-equal"),
    pytest.param({"matchLabels": {"role": "worker", "zone": "b"}}, False, id="one-of-two-labels-differs"),
    pytest.param({"matchLabels": {"gpu": "x"}}, False, id="label-absent"),
    pytest.param({"matchLabels": {"empty": ""}}, True, id="empty-value-equal"),
    # In
    pytest.param(exprs(expr("zone", "In", "a", "b")), True, id="in-one-of"),
    pytest.param(exprs(expr("zone", "In", "b")), False, id="in-none-of"),
    pytest.param(exprs(expr("gpu", "In", "a")), False, id="in-absent"),
    # NotIn
    pytest.param(exprs(expr("zone", "NotIn", "b")), True, id="notin-other-value"),
    pytest.param(exprs(expr("zone", "NotIn", "a")), False, id="notin-value"),
    pytest.param(exprs(expr("gpu", "NotIn", "a")), True, id="notin-absent-holds"),
    # Exists / DoesNotExist
    pytest.param(exprs(expr("zone", "Exists")), True, id="exists"),
    pytest.param(exprs(expr("empty", "Exists")), True, id="exists-empty-value"),
    pytest.param(exprs(expr("gpu", "Exists")), False, id="exists-absent"),
    pytest.param(exprs(expr("gpu", "DoesNotExist")), True, id="doesnotexist"),
    pytest.param(exprs(expr("zone", "DoesNotExist")), False, id="doesnotexist-present"),
    pytest.param(exprs({"key": "zone", "operator": "Exists"}), True, id="exists-values-omitted"),
    pytest.param(exprs({"key": "zone", "operator": "Exists", "values": None}), True, id="exists-values-null"),
    # AND of everything
    pytest.param({"matchLabels": {"role": "worker"}, **exprs(expr("zone", "In", "a"), expr("gpu", "DoesNotExist"))},
                 True, id="labels-and-expressions-all-hold"),
    pytest.param({"matchLabels": {"role": "worker"}, **exprs(expr("zone", "In", "a"), expr("gpu", "Exists"))},
                 False, id="labels-and-expressions-one-fails"),
    # empty and null
    pytest.param({}, True, id="empty-selects-everything"),
    pytest.param({"matchLabels": {}, "matchExpressions": []}, True, id="empty-parts-select-everything"),
    pytest.param({"matchLabels": None, "matchExpressions": None}, True, id="null-parts-select-everything"),
    pytest.param(None, False, id="null-selects-nothing"),
    # malformed: selects nothing
    pytest.param(exprs(expr("zone", "Gt", "1")), False, id="unknown-operator"),
    pytest.param(exprs(expr("zone", "exists")), False, id="operator-case-sensitive"),
    pytest.param(exprs(expr("zone", None)), False, id="operator-missing"),
    pytest.param(exprs(expr("zone", "Exists"), expr("zone", "Bogus")), False, id="one-bad-expression-spoils-all"),
    pytest.param(exprs(expr("zone", "In")), False, id="in-without-values"),
    pytest.param(exprs(expr("gpu", "NotIn")), False, id="notin-without-values"),
    pytest.param(exprs(expr("zone", "Exists", "a")), False, id="exists-with-values"),
    pytest.param(exprs(expr("gpu", "DoesNotExist", "a")), False, id="doesnotexist-with-values"),
    pytest.param(exprs({"key": "zone", "operator": "In", "values": "a"}), False, id="values-a-string"),
    pytest.param(exprs(expr("zone", "In", 1)), False, id="value-not-a-string"),
    pytest.param(exprs(expr("", "Exists")), False, id="key-empty"),
    pytest.param(exprs(expr(None, "DoesNotExist")), False, id="key-missing"),
    pytest.param(exprs(expr(["zone"], "Exists")), False, id="key-a-list"),
    pytest.param(exprs("zone"), False, id="expression-a-string"),
    pytest.param({"matchExpressions": {"key": "zone", "operator": "Exists"}}, False, id="expressions-a-mapping"),
    pytest.param({"matchLabels": [["role", "worker"]]}, False, id="match-labels-a-list"),
    pytest.param({"matchLabels": ""}, False, id="match-labels-a-string"),
    pytest.param({"matchLabels": {"role": 1}}, False, id="label-value-not-a-string"),
    pytest.param({"matchLabels": {"role": None}}, False, id="label-value-null"),
    pytest.param("role=worker", False, id="selector-a-string"),
    pytest.param(["role"], False, id="selector-a-list"),
]


@pytest.mark.parametrize("selector, selected", MATCHES)
def test_matches(selector, selected):
    assert matches(selector, LABELS) is selected


@pytest.mark.parametrize(
    "selector, expected",
    [
        pytest.param({"matchLabels": {"a": "1"}, "matchExpressions": [expr("b", "NotIn", "2", "3")]},
                     (Requirement("a", "In", frozenset({"1"})), Requirement("b", "NotIn", frozenset({"2", "3"}))),
                     id="labels-first-then-expressions"),
        pytest.param({}, (), id="empty"),
        pytest.param(None, None, id="null"),
        pytest.param({"matchExpressions": [expr("b", "Bogus")]}, None, id="malformed"),
    ],
)
def test_requirements(selector, expected):
    assert requirements(selector) == expected


@pytest.mark.parametrize(
    "selector, empty",
    [
        pytest.param(None, True, id="null"),
        pytest.param({}, True, id="empty"),
        pytest.param({"matchLabels": {}}, True, id="empty-labels"),
        pytest.param({"matchLabels": {"a": "1"}}, False, id="a-label"),
        pytest.param({"matchExpressions": [expr("a", "Exists")]}, False, id="an-expression"),
        pytest.param({"matchExpressions": [expr("a", "Bogus")]}, False, id="malformed-is-not-empty"),
        pytest.param("x", False, id="not-a-mapping-is-not-empty"),
    ],
)
def test_is_empty(selector, empty):
    assert is_empty(selector) is empty
