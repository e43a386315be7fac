"""The durable form of one owner's memory: the PlacementMemory custom resource (behaviour.md "Memory").

The pydantic model below is the schema; crds/placementmemory.yaml is generated from
it (`make crds`) and a test keeps the two in sync. Conversions are pure.

Compact form. An object holds tables (node names, topology paths, sub-groups), one
per line, and one short line per rank or pool entry that names table entries by
number and times as seconds before `epoch`:

    rankRows:  <rank>:n<node> b<age> [w] [p<node>] [t<path>] [g<group>] [f<node>@<age>]...
    poolRows:  n<node> u<age> [w]

`w` is warm, `p` the previous node, `f` a fault mark. A large owner is split over
several objects (shards `<name>`, `<name>-2`, ...), each self-contained and packed to
at most STATUS_BUDGET bytes on the wire, so no object nears etcd's limit whatever the
owner's size or its node names' length. The first object (the primary) carries the
stats and the shard count, and is written last. The form before it (a list of rank
objects in `ranks`, `pool`) is still read."""
from homing.placementmemory.crd import crd, status_schema
from homing.placementmemory.decode import (
    Fragment,
    NameMismatch,
    NotWritten,
    belonging,
    check_rank_key,
    decode,
    from_status,
    legacy_status,
    merge,
    read_object,
)
from homing.placementmemory.encode import Encoded, Snapshot, encode, snapshot
from homing.placementmemory.names import primary_owner_key, resource_body, resource_name, shard_name
from homing.placementmemory.schema import (
    API_VERSION,
    GROUP,
    KIND,
    MIB,
    PLURAL,
    STATUS_BUDGET,
    VERSION,
    FaultNodeStatus,
    OwnerStatus,
    PlacementMemoryStatus,
    PoolStatus,
    RankStatus,
    ShardStatus,
    StatsStatus,
    SummaryStatus,
)
from homing.placementmemory.wire import json_wire_size, wire_len

__all__ = [
    "API_VERSION",
    "Encoded",
    "FaultNodeStatus",
    "Fragment",
    "GROUP",
    "KIND",
    "MIB",
    "NameMismatch",
    "OwnerStatus",
    "PLURAL",
    "PlacementMemoryStatus",
    "PoolStatus",
    "RankStatus",
    "STATUS_BUDGET",
    "ShardStatus",
    "Snapshot",
    "StatsStatus",
    "SummaryStatus",
    "VERSION",
    "belonging",
    "check_rank_key",
    "crd",
    "decode",
    "encode",
    "from_status",
    "json_wire_size",
    "legacy_status",
    "merge",
    "primary_owner_key",
    "NotWritten",
    "read_object",
    "resource_body",
    "resource_name",
    "shard_name",
    "snapshot",
    "status_schema",
    "wire_len",
]
