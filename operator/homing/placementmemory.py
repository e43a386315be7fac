"""The durable form of one owner's memory: the PlacementMemory custom resource (SPEC 2.1).

The pydantic model below is the schema; crds/placementmemory.yaml is generated from
it (`make crds`) and a test keeps the two in sync. Conversions are pure."""
from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, Stats
from homing.engine.model import OwnerRef

GROUP = "homing.io"
VERSION = "v1alpha1"
KIND = "PlacementMemory"
PLURAL = "placementmemories"
API_VERSION = f"{GROUP}/{VERSION}"


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class OwnerStatus(_Camel):
    api_version: str
    kind: str
    name: str
    uid: str


class FaultNodeStatus(_Camel):
    node: str
    at: datetime


class RankStatus(_Camel):
    rank: str
    node: str
    previous_node: str | None = None
    topology: dict[str, str] = Field(default_factory=dict)
    bound_at: datetime
    warm: bool = False
    fault_nodes: list[FaultNodeStatus] = Field(default_factory=list)
    group: str | None = None


class PoolStatus(_Camel):
    node: str
    last_used: datetime
    warm: bool = False


class StatsStatus(_Camel):
    admitted: int = Field(default=0, ge=0)
    home: int = Field(default=0, ge=0)
    domain: int = Field(default=0, ge=0)
    elsewhere: int = Field(default=0, ge=0)


class SummaryStatus(_Camel):
    ranks: int = Field(default=0, ge=0)
    warm: int = Field(default=0, ge=0)
    pool: int = Field(default=0, ge=0)


class PlacementMemoryStatus(_Camel):
    owner: OwnerStatus
    ranks: list[RankStatus] = Field(default_factory=list)
    pool: list[PoolStatus] = Field(default_factory=list)
    last_seen: datetime
    stats: StatsStatus = Field(default_factory=StatsStatus)
    summary: SummaryStatus = Field(default_factory=SummaryStatus)


# -- conversions ------------------------------------------------------------------

def _ts(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).replace(microsecond=0)


def _epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def to_status(mem: OwnerMemory) -> PlacementMemoryStatus:
    o = mem.owner
    ranks = [
        RankStatus(
            rank=key,
            node=e.node,
            previous_node=e.previous_node,
            topology=dict(e.topology),
            bound_at=_ts(e.bound_at),
            warm=e.warm,
            fault_nodes=[FaultNodeStatus(node=m.node, at=_ts(m.at)) for m in e.faults or ()],
            group=e.group,
        )
        for key, e in sorted(mem.ranks.items())
    ]
    pool = [PoolStatus(node=n, last_used=_ts(p.last_used), warm=p.warm) for n, p in sorted(mem.pool.items())]
    s = mem.stats
    return PlacementMemoryStatus(
        owner=OwnerStatus(api_version=o.api_version, kind=o.kind, name=o.name, uid=o.uid),
        ranks=ranks,
        pool=pool,
        last_seen=_ts(mem.last_seen),
        stats=StatsStatus(admitted=s.admitted, home=s.home, domain=s.domain, elsewhere=s.elsewhere),
        summary=SummaryStatus(
            ranks=len(ranks), warm=sum(1 for r in ranks if r.warm), pool=len(pool)
        ),
    )


def from_status(status: PlacementMemoryStatus, namespace: str) -> OwnerMemory:
    o = status.owner
    owner = OwnerRef(api_version=o.api_version, kind=o.kind, name=o.name, namespace=namespace, uid=o.uid)
    ranks = {
        r.rank: RankEntry(
            node=r.node,
            bound_at=_epoch(r.bound_at),
            topology=tuple(r.topology.items()),
            previous_node=r.previous_node,
            warm=r.warm,
            faults=[FaultMark(node=f.node, at=_epoch(f.at)) for f in r.fault_nodes] or None,
            group=r.group,
        )
        for r in status.ranks
    }
    pool = {p.node: PoolEntry(last_used=_epoch(p.last_used), warm=p.warm) for p in status.pool}
    s = status.stats
    return OwnerMemory(
        owner=owner,
        last_seen=_epoch(status.last_seen),
        ranks=ranks,
        pool=pool,
        stats=Stats(admitted=s.admitted, home=s.home, domain=s.domain, elsewhere=s.elsewhere),
    )


def resource_name(owner: OwnerRef) -> str:
    """`<kind>-<name>-<uid prefix>`: readable, and unique when two owners share a name."""
    base = re.sub(r"[^a-z0-9.-]", "-", f"{owner.kind.lower()}-{owner.name.lower()}")[:240].strip("-.")
    digest = hashlib.sha256(owner.uid.encode()).hexdigest()[:6]
    return f"{base}-{digest}"


def resource_body(owner: OwnerRef) -> dict[str, Any]:
    """A new PlacementMemory, owned by the workload so that garbage collection takes it along."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": resource_name(owner),
            "namespace": owner.namespace,
            "labels": {"app.kubernetes.io/managed-by": "homing"},
            "ownerReferences": [
                {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid}
            ],
        },
        "spec": {},
    }


# -- CRD generation -------------------------------------------------------------------

def _structural(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Pydantic JSON schema -> Kubernetes structural schema: inline $refs, turn
    Optional into nullable, drop titles."""
    if "$ref" in schema:
        return _structural(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        out = _structural(options[0], defs)
        if len(options) < len(schema["anyOf"]):
            out["nullable"] = True
        return out
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        if key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        elif key == "minimum":
            out[key] = value
        else:
            out[key] = value
    return out


def status_schema() -> dict[str, Any]:
    raw = PlacementMemoryStatus.model_json_schema(by_alias=True)
    return _structural(raw, raw.get("$defs", {}))


def crd() -> dict[str, Any]:
    def column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
        col = {"name": name, "type": kind, "jsonPath": path}
        if priority:
            col["priority"] = priority
        return col

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "plural": PLURAL,
                "singular": "placementmemory",
                "shortNames": ["pmem"],
                "listKind": f"{KIND}List",
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        column("Owner-Kind", ".status.owner.kind"),
                        column("Owner", ".status.owner.name"),
                        column("Ranks", ".status.summary.ranks", "integer"),
                        column("Warm", ".status.summary.warm", "integer"),
                        column("Pool", ".status.summary.pool", "integer", priority=1),
                        column("Hits", ".status.stats.home", "integer"),
                        column("Misses", ".status.stats.elsewhere", "integer"),
                        column("Last-Seen", ".status.lastSeen", "date"),
                        column("Age", ".metadata.creationTimestamp", "date"),
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "Where each rank of one workload ran; written by homing.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "description": "Unused; the memory is status."},
                                "status": status_schema(),
                            },
                        }
                    },
                }
            ],
        },
    }
