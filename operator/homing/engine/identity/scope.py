"""Which pods the webhook touches (behaviour.md "Admission" scope). Namespace opt-in is enforced by the
webhook configuration's selectors; the rest is checked here on the pod itself."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from homing.engine.identity.accelerators import AcceleratorRequest, accelerator_request

DECISION_ANNOTATION = "homing.io/decision"
HOME_ANNOTATION = "homing.io/home"


def accelerator_resources(pod: dict[str, Any], prefixes: Iterable[str]) -> list[str]:
    """Resource names of the pod's containers that start with an accelerator prefix."""
    return list(accelerator_request(pod, prefixes).names)


def out_of_scope(pod: dict[str, Any], prefixes: Iterable[str], request: AcceleratorRequest | None = None) -> str | None:
    """Why the webhook must leave this pod alone, or None when it is in scope. `request`: the
    pod's accelerator request when the caller has read it (one reading per admission)."""
    meta = pod.get("metadata") or {}
    if (pod.get("spec") or {}).get("nodeName"):
        return "already-bound"
    if DECISION_ANNOTATION in (meta.get("annotations") or {}):
        return "already-decided"
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "DaemonSet":
            return "daemonset"
    if not (request or accelerator_request(pod, prefixes)).names:
        return "no-accelerator"
    return None
