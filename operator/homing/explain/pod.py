"""A pod's explanation: homing's decision (the `homing.io/decision` annotation), and where
the pod bound compared with it (its node, homing's outcome Events). Pure."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from homing.config import Scope
from homing.engine.identity.scope import DECISION_ANNOTATION, HOME_ANNOTATION, accelerator_resources
from homing.explain import reasons

OUTCOME_EVENTS = ("ReturnedHome", "PlacedAwayFromHome", "PlacedOnWarmNode")
_AWAY = re.compile(r"\((domain|elsewhere): ([a-z-]+)\)\s*$")


class NotInScope(Exception):
    """homing never looks at this pod; the message says why."""


@dataclass
class Outcome:
    result: str  # home, domain, elsewhere, image-warm, pending, away, bound
    reason: str | None
    text: str


@dataclass
class PodExplanation:
    pod: str
    node: str | None
    phase: str | None
    decided: bool
    owner: str | None = None
    rank: str | None = None
    kind: str | None = None
    home: str | None = None
    reason: str | None = None
    reason_text: str = ""
    domains: list[str] = field(default_factory=list)
    avoided: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    displace: str | None = None
    truncated: bool = False
    outcome: Outcome | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


def _labels(obj: dict[str, Any] | None) -> dict[str, Any]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def scope_problem(pod: dict[str, Any], namespace: dict[str, Any] | None, scope: Scope, prefixes: list[str] | None = None) -> str | None:
    """Why the webhook would leave this pod alone (behaviour.md "Admission" scope); None when it is in scope.
    `namespace` None: not readable, so the namespace opt-in is not judged."""
    meta = pod.get("metadata") or {}
    opt = _labels(pod).get(scope.pod_label)
    if opt == "false":
        return f"the pod is labelled {scope.pod_label}=false (opted out)"
    ns_opted = _labels(namespace).get(scope.namespace_label) == scope.namespace_label_value
    if namespace is not None and not ns_opted and opt != "true":
        return (f"namespace {meta.get('namespace')} is not labelled {scope.namespace_label}="
                f"{scope.namespace_label_value} and the pod has no {scope.pod_label}=true label")
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict) and r.get("controller")]
    if any(r.get("kind") == "DaemonSet" for r in refs):
        return "the pod belongs to a DaemonSet"
    if not accelerator_resources(pod, prefixes or scope.resource_prefixes):
        wanted = ", ".join(prefixes or scope.resource_prefixes)
        return f"the pod requests no accelerator resource (names starting with {wanted})"
    if not refs:
        return "the pod has no controller (ownerReference with controller: true): homing tracks workloads"
    return None


def _event_time(event: dict[str, Any]) -> str:
    return event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""


def outcome_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """homing's outcome Events on the pod, oldest first."""
    mine = [e for e in events if e.get("reason") in OUTCOME_EVENTS]
    return [
        {"reason": e.get("reason"), "message": e.get("message") or "", "time": _event_time(e)}
        for e in sorted(mine, key=_event_time)
    ]


def outcome(node: str | None, home: str | None, events: list[dict[str, Any]]) -> Outcome:
    """Where the pod bound compared with its home: homing's own Event says it best; without
    one (Events expire, by default after an hour) the node and home still tell home or not."""
    if not node:
        return Outcome("pending", None, "not bound yet")
    latest = events[-1] if events else None
    if latest and latest["reason"] == "ReturnedHome":
        return Outcome("home", None, f"bound to {node}, its home")
    if latest and latest["reason"] == "PlacedAwayFromHome":
        found = _AWAY.search(latest["message"])
        result, why = found.groups() if found else ("elsewhere", "unknown")
        if result == "domain":
            return Outcome(result, None, f"bound to {node}, in the home domain of {home}")
        return Outcome(result, why, f"bound to {node}, not its home {home}: {reasons.AWAY.get(why, why)}")
    if latest and latest["reason"] == "PlacedOnWarmNode":
        return Outcome("image-warm", None, f"bound to {node}, a node that holds its images")
    if home and node == home:
        return Outcome("home", None, f"bound to {node}, its home")
    if home:
        return Outcome("away", None, f"bound to {node}, not its home {home} (no outcome Event left to say why)")
    return Outcome("bound", None, f"bound to {node}; homing had no home for it")


def _decision(pod: dict[str, Any]) -> dict[str, Any] | None:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(DECISION_ANNOTATION)
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return {"reason": "unreadable", "raw": raw}
    return record if isinstance(record, dict) else {"reason": "unreadable", "raw": raw}


def explain_pod(pod: dict[str, Any], events: list[dict[str, Any]], namespace: dict[str, Any] | None, scope: Scope) -> PodExplanation:
    """Raises NotInScope for a pod homing never decided on and never would."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    node = spec.get("nodeName")
    mine = outcome_events(events)
    base: dict[str, Any] = dict(pod=f"{meta.get('namespace')}/{meta.get('name')}", node=node,
                phase=(pod.get("status") or {}).get("phase"), events=mine)
    record = _decision(pod)
    if record is None:
        problem = scope_problem(pod, namespace, scope)
        if problem:
            raise NotInScope(f"pod {base['pod']} is not in homing's scope: {problem}")
        return PodExplanation(**base, decided=False, reason_text=(
            "no decision recorded: the pod was created before homing served its webhook, or the "
            "webhook was not reached (failurePolicy Ignore admits pods unpatched)"))
    home = record.get("home") or (meta.get("annotations") or {}).get(HOME_ANNOTATION)
    reason = str(record.get("reason") or "")
    return PodExplanation(
        **base,
        decided=True,
        owner=record.get("owner"),
        rank=record.get("rank"),
        kind=record.get("kind") or "node",
        home=home,
        reason=reason,
        reason_text=reasons.decision_text(reason, home),
        domains=list(record.get("domains") or ()),
        avoided=list(record.get("avoid") or ()),
        preferences=list(record.get("prefer") or ()),
        displace=record.get("displace"),
        truncated=bool(record.get("truncated")),
        outcome=outcome(node, home, mine),
    )
