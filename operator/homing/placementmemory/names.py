"""Object names and bodies: the primary `<kind>-<name>-<uid6>`, its shards `-2`, `-3`, …"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from homing.engine.model import OwnerRef
from homing.placementmemory.schema import API_VERSION, KIND


def resource_name(owner: OwnerRef) -> str:
    """`<kind>-<name>-<uid prefix>`: readable, and unique when two owners share a name."""
    base = re.sub(r"[^a-z0-9.-]", "-", f"{owner.kind.lower()}-{owner.name.lower()}")[:240].strip("-.")
    digest = hashlib.sha256(owner.uid.encode()).hexdigest()[:6]
    return f"{base}-{digest}"


def shard_name(owner: OwnerRef, number: int) -> str:
    """The primary keeps the owner's name, shard n is `<name>-n`: no primary looks like a
    shard, it ends in a dash and six hex digits where a shard has a dash and fewer digits."""
    name = resource_name(owner)
    return name if number == 1 else f"{name}-{number}"


def resource_body(owner: OwnerRef, number: int = 1) -> dict[str, Any]:
    """A new PlacementMemory, owned by the workload so that garbage collection takes it along."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": shard_name(owner, number),
            "namespace": owner.namespace,
            "labels": {"app.kubernetes.io/managed-by": "homing"},
            "ownerReferences": [
                {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}
            ],
        },
        "spec": {},
    }


def primary_owner_key(body: Mapping[str, Any]) -> str | None:
    """The owner key a (deleted) object stands for; None for a shard beyond the first,
    which homing deletes itself when an owner's memory shrinks."""
    status = body.get("status") or {}
    uid = (status.get("owner") or {}).get("uid")
    namespace = (body.get("metadata") or {}).get("namespace")
    if not uid or not namespace or ((status.get("shard") or {}).get("index") or 1) != 1:
        return None
    return f"{namespace}/{uid}"
