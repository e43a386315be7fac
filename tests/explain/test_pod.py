"""explain_pod, table-driven: pods as the webhook left them, Events as the operator posted
them, no cluster."""
from __future__ import annotations

import json

import pytest

from homing.config import Scope
from homing.explain import NotInScope, explain_pod

SCOPE = Scope()
OPTED_IN = {"metadata": {"name": "ai", "labels": {"homing.io/enabled": "true"}}}
PLAIN_NS = {"metadata": {"name": "ai"}}
OWNER = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "llama", "uid": "u1", "controller": True}]


def pod(decision: dict | None = None, node: str | None = None, labels=None, owners=OWNER, npus: int = 1) -> dict:
    ann = {}
    if decision is not None:
        ann["homing.io/decision"] = json.dumps(decision)
        if decision.get("home"):
            ann["homing.io/home"] = decision["home"]
    requests = {"huawei.com/Ascend910": str(npus)} if npus else {"cpu": "1"}
    return {
        "metadata": {"name": "llama-worker-3", "namespace": "ai", "uid": "p1", "annotations": ann,
                     "labels": labels or {}, "ownerReferences": owners},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }


def event(reason: str, message: str, at: str = "2026-11-30T10:00:00Z") -> dict:
    return {"reason": reason, "message": message, "lastTimestamp": at, "involvedObject": {"uid": "p1"}}


HOME = {"owner": "Job/ai/llama", "rank": "worker/3", "home": "node-a", "reason": "home"}


@pytest.mark.parametrize(
    "decision, node, events, result, reason",
    [
        (HOME, None, [], "pending", None),
        (HOME, "node-a", [event("ReturnedHome", "bound to its home node node-a")], "home", None),
        (HOME, "node-a", [], "home", None),  # the Event expired: node == home still says home
        (HOME, "node-b", [event("PlacedAwayFromHome", "bound to node-b, home was node-a (domain: domain)")], "domain", None),
        (HOME, "node-b", [event("PlacedAwayFromHome",
                                "bound to node-b, a node that holds its images, home was node-a (elsewhere: home-busy)")],
         "elsewhere", "home-busy"),
        (HOME, "node-b", [], "away", None),
        ({"owner": "Job/ai/llama", "rank": "worker/3", "home": None, "reason": "no-memory"}, "node-b",
         [event("PlacedOnWarmNode", "bound to node-b, which holds its images (image-warm)")], "image-warm", None),
        ({"owner": "Job/ai/llama", "rank": "worker/3", "home": None, "reason": "no-memory"}, "node-b", [], "bound", None),
        # the latest outcome Event counts; other Events are ignored
        (HOME, "node-a", [event("PlacedAwayFromHome", "bound to node-b, home was node-a (elsewhere: unknown)", "2026-11-30T09:00:00Z"),
                          event("Scheduled", "whatever", "2026-11-30T11:00:00Z"),
                          event("ReturnedHome", "bound to its home node node-a", "2026-11-30T10:00:00Z")], "home", None),
    ],
)
def test_outcome(decision, node, events, result, reason):
    x = explain_pod(pod(decision, node), events, OPTED_IN, SCOPE)
    assert x.decided and x.outcome.result == result and x.outcome.reason == reason
    assert all(e["reason"] != "Scheduled" for e in x.events)


def test_decision_fields_are_read_back():
    decision = {"owner": "Job/ai/llama", "rank": "worker/3", "home": "node-a", "reason": "home-sub-healthy",
                "kind": "superpod", "domains": ["superpod=5"], "avoid": ["node-c"], "prefer": ["image-warm"],
                "displace": "Deployment/ai/chat", "truncated": True}
    x = explain_pod(pod(decision), [], None, SCOPE)
    assert (x.owner, x.rank, x.home, x.kind) == ("Job/ai/llama", "worker/3", "node-a", "superpod")
    assert (x.domains, x.avoided, x.preferences, x.displace, x.truncated) == (
        ["superpod=5"], ["node-c"], ["image-warm"], "Deployment/ai/chat", True)
    assert "sub-healthy" in x.reason_text and "node-a" in x.reason_text


@pytest.mark.parametrize(
    "reason, words",
    [("home", "healthy"), ("home-faulted", "faulty"), ("home-gone", "no longer exists"), ("no-memory", "no memory"),
     ("pool", "promised node-a"), ("pool-exhausted", "taken"), ("from-the-future", "'from-the-future'")],
)
def test_reason_in_words(reason, words):
    x = explain_pod(pod({**HOME, "reason": reason}), [], OPTED_IN, SCOPE)
    assert words in x.reason_text


@pytest.mark.parametrize(
    "the_pod, namespace, why",
    [
        (pod(), PLAIN_NS, "not labelled homing.io/enabled=true"),
        (pod(labels={"homing.io/enabled": "false"}), OPTED_IN, "opted out"),
        (pod(npus=0), OPTED_IN, "no accelerator"),
        (pod(owners=[]), OPTED_IN, "no controller"),
        (pod(owners=[{**OWNER[0], "kind": "DaemonSet"}]), OPTED_IN, "DaemonSet"),
    ],
)
def test_not_in_scope(the_pod, namespace, why):
    with pytest.raises(NotInScope, match=why):
        explain_pod(the_pod, [], namespace, SCOPE)


@pytest.mark.parametrize(
    "the_pod, namespace",
    [
        (pod(), OPTED_IN),
        (pod(labels={"homing.io/enabled": "true"}), PLAIN_NS),  # the per-pod opt-in
        (pod(), None),  # the namespace could not be read: its opt-in is not judged
    ],
)
def test_in_scope_without_a_decision(the_pod, namespace):
    x = explain_pod(the_pod, [], namespace, SCOPE)
    assert not x.decided and x.outcome is None and "no decision recorded" in x.reason_text


def test_an_unreadable_decision_is_shown_not_raised():
    p = pod()
    p["metadata"]["annotations"]["homing.io/decision"] = "{not json"
    x = explain_pod(p, [], OPTED_IN, SCOPE)
    assert x.decided and x.reason == "unreadable"
