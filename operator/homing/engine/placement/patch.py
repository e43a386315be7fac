"""The admission patch: append preferred terms and homing.io annotations as JSON-patch
"add" operations. The user's own affinity terms are never replaced or removed."""
from __future__ import annotations

from typing import Any

from homing.engine.model import Term
from homing.engine.placement.rules.term import kept, one_term_per_node_set

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def affinity_patch(pod: dict[str, Any], terms: list[Term], annotations: dict[str, str]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    spec = pod.get("spec") or {}
    # kept: the last line of defence (the API server refuses a pod with `In []`)
    terms = one_term_per_node_set(kept(terms))
    if terms:
        values = [t.as_k8s() for t in terms]
        affinity = spec.get("affinity")
        node_affinity = (affinity or {}).get("nodeAffinity")
        preferred = (node_affinity or {}).get(PREFERRED)
        if affinity is None:
            ops.append({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {PREFERRED: values}}})
        elif node_affinity is None:
            ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {PREFERRED: values}})
        elif preferred is None:
            ops.append({"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREFERRED}", "value": values})
        else:
            ops.extend(
                {"op": "add", "path": f"/spec/affinity/nodeAffinity/{PREFERRED}/-", "value": v} for v in values
            )
    if annotations:
        existing = (pod.get("metadata") or {}).get("annotations")
        if existing is None:
            ops.append({"op": "add", "path": "/metadata/annotations", "value": dict(annotations)})
        else:
            ops.extend(
                {"op": "add", "path": f"/metadata/annotations/{_escape(k)}", "value": v}
                for k, v in annotations.items()
            )
    return ops
