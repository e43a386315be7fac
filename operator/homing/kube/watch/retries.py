"""What a failed PlacementMemory write means (behaviour.md "Memory"): a namespace that is gone takes
its owners with it, anything else is tried again later, waiting longer each time."""
from __future__ import annotations

import json
from dataclasses import dataclass

from homing.kube.client import KubeError

BACKOFF_FIRST = 2.0  # seconds before the first retry of a failed write
BACKOFF_MAX = 300.0


class NamespaceGone(Exception):
    """The owner's namespace is deleted or terminating: nothing can be created there again."""


class SchemaOutdated(Exception):
    """The API server dropped the compact fields: its PlacementMemory CRD is older than homing."""


def namespace_gone(err: KubeError, namespace: str) -> bool:
    """A create refused because the namespace is going (403 NamespaceTerminating) or gone
    (404 naming the namespace, not the resource: that would be a missing CRD)."""
    if err.status == 403:
        return "NamespaceTerminating" in err.body or "is being terminated" in err.body
    if err.status != 404:
        return False
    try:
        details = json.loads(err.body).get("details") or {}
    except (ValueError, AttributeError):
        return False
    return details.get("kind") == "namespaces" and details.get("name") == namespace


@dataclass(slots=True)
class Retry:
    failures: int
    not_before: float  # on the store's clock


def backoff(failures: int) -> float:
    return min(BACKOFF_FIRST * 2.0 ** min(failures - 1, 20), BACKOFF_MAX)
