"""The PlacementMemory resource (behaviour.md "Memory"): its names, its status schema (pydantic;
crds/placementmemory.yaml is generated from it) and the byte budget of one object."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

GROUP = "homing.io"
VERSION = "v1alpha1"
KIND = "PlacementMemory"
PLURAL = "placementmemories"
API_VERSION = f"{GROUP}/{VERSION}"

MIB = 1024 * 1024
# One object's status on the wire, at most, by construction: with the metadata homing
# writes (under 2 KiB) an object stays far under 1 MiB (etcd refuses 1.5 MiB), and the
# client's JSON work for one request holds the event loop about a millisecond.
STATUS_BUDGET = 256 * 1024


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


class ShardStatus(_Camel):
    index: int = Field(default=1, ge=1, description="This object's place among the owner's objects: 1 is the primary.")
    count: int = Field(default=1, ge=1, description="How many objects the owner had when this one was written.")


class PlacementMemoryStatus(_Camel):
    owner: OwnerStatus
    ranks: list[RankStatus] = Field(default_factory=list, description="The earlier form: read, no longer written.")
    pool: list[PoolStatus] = Field(default_factory=list, description="The earlier form: read, no longer written.")
    last_seen: datetime
    stats: StatsStatus = Field(default_factory=StatsStatus)
    summary: SummaryStatus = Field(default_factory=SummaryStatus, description="What this object holds.")
    shard: ShardStatus = Field(default_factory=ShardStatus)
    epoch: int | None = Field(default=None, description="Unix seconds the ages in the rows count back from.")
    nodes: str | None = Field(default=None, description="Node names, one a line; rows name line numbers (from 0).")
    paths: str | None = Field(default=None, description="Topology paths, one a line: level=value ..., innermost first.")
    groups: str | None = Field(default=None, description="Sub-groups (Volcano), one a line.")
    rank_rows: str | None = Field(
        default=None,
        description="One line a rank: <rank>:n<node> b<age> [w] [p<node>] [t<path>] [g<group>] [f<node>@<age>]...",
    )
    pool_rows: str | None = Field(default=None, description="One line a pool home: n<node> u<age> [w].")
