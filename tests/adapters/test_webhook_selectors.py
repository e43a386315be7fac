"""settings.webhook.namespace_selector / object_selector (the chart's webhook.namespaceSelector
and objectSelector): added to the selectors scope gives each webhook entry, so they narrow
which pods the API server sends and never widen the scope; given as JSON in the environment,
as the chart passes them."""
from __future__ import annotations

import json

from homing.config import Settings
from homing.kube.admission.webhookconfig import configuration, narrowed

NOT_KUBE_SYSTEM = {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
NOT_SKIPPED = {"key": "example.com/skip", "operator": "DoesNotExist"}


def test_no_extra_selectors_write_what_scope_alone_gives():
    plain = configuration(Settings.model_construct(), None)
    assert [w["namespaceSelector"] for w in plain["webhooks"]] == [
        {"matchLabels": {"homing.io/enabled": "true"}},
        {"matchExpressions": [{"key": "homing.io/enabled", "operator": "NotIn", "values": ["true"]}]},
    ]


def test_extra_selectors_are_added_to_both_entries():
    settings = Settings(webhook={"namespace_selector": {"matchExpressions": [NOT_KUBE_SYSTEM]},
                                 "object_selector": {"matchExpressions": [NOT_SKIPPED], "matchLabels": {"team": "a"}}})
    namespaces, labelled = configuration(settings, None)["webhooks"]
    assert namespaces["namespaceSelector"] == {"matchLabels": {"homing.io/enabled": "true"}, "matchExpressions": [NOT_KUBE_SYSTEM]}
    assert namespaces["objectSelector"] == {
        "matchLabels": {"team": "a"},
        "matchExpressions": [{"key": "homing.io/enabled", "operator": "NotIn", "values": ["false"]}, NOT_SKIPPED],
    }
    assert labelled["namespaceSelector"]["matchExpressions"][1:] == [NOT_KUBE_SYSTEM]
    assert labelled["objectSelector"] == {"matchLabels": {"team": "a", "homing.io/enabled": "true"}, "matchExpressions": [NOT_SKIPPED]}


def test_an_extra_label_never_changes_the_scope_label():
    assert narrowed({"matchLabels": {"homing.io/enabled": "true"}}, {"matchLabels": {"homing.io/enabled": "no"}}) == {
        "matchLabels": {"homing.io/enabled": "true"}
    }


def test_the_environment_gives_them_as_json(monkeypatch):
    monkeypatch.setenv("HOMING_WEBHOOK__NAMESPACE_SELECTOR", json.dumps({"matchExpressions": [NOT_KUBE_SYSTEM]}))
    assert Settings().webhook.namespace_selector == {"matchExpressions": [NOT_KUBE_SYSTEM]}
