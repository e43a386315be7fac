"""behaviour.md "Identity": a rankless pod's pool is its owner's, or its owner's group's: KubeRay's
worker groups (`ray.io/group`) run different images on different nodes, so each group
returns to its own warm nodes."""
from __future__ import annotations

from typing import Any

POOL_GROUP_LABELS = ("ray.io/group",)  # first present wins
MAX_GROUP_LENGTH = 63  # a label value's bound: anything longer was not written by a controller


def pool_group(pod: dict[str, Any]) -> str | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if not isinstance(labels, dict):
        return None
    for key in POOL_GROUP_LABELS:
        value = labels.get(key)
        if isinstance(value, str) and 0 < len(value) <= MAX_GROUP_LENGTH:
            return value
    return None
