"""behaviour.md "Beyond the home": the candidate lists of the preferences beyond home, most relevant first.
Strategies bound them (behaviour.md "Weights" list bound) and turn them into terms."""
from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

from homing.engine.cluster.images import holding_all
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import Burst, Load
from homing.engine.model import ClusterSnapshot, Health, key_namespace
from homing.engine.placement.displacement import choose, victim_on, victims


@dataclass(frozen=True, slots=True)
class BeyondHome:
    """What a strategy may prefer when home is not free: warm nodes, vacant homes to avoid."""

    warm: tuple[str, ...] = ()  # healthy nodes holding the pod's images, none claimed, most relevant first
    # the label keys of the pod's images (rules/image_warm.py): when set, the home and image-warm
    # terms ask the scheduler for them at bind time instead of naming `warm`
    image_keys: tuple[str, ...] = ()
    sick_holders: tuple[str, ...] = ()  # unhealthy nodes carrying those labels: never image-warm
    vacant: tuple[str, ...] = ()  # other owners' (and siblings') vacant homes, most recent first
    displace: tuple[str, ...] = ()  # when nothing is free: the one victim workload's nodes
    # beside `displace`: homes of owners waiting at a lower priority, then nodes with room now, nobody's vacant home
    free: tuple[str, ...] = ()
    claimed: tuple[str, ...] = ()  # vacant homes others are expected back on (engine/placement/claimed.py)
    keep_off: bool = True  # the claimed preference is on: the claimed term also lists fault nodes
    victim: str | None = None
    burst: Burst | None = None  # the owner's burst with this pod counted, for the adapter to keep


NOTHING = BeyondHome()


def warm_nodes(images: tuple[str, ...], snapshot: ClusterSnapshot, index: MemoryIndex, limit: int,
               namespace: str = "", claimed: Collection[str] = (), reported: bool = True) -> tuple[str, ...]:
    """Where the images last ran in the pod's namespace (homing's memory) first, then the
    nodes whose kubelet reports them (`reported`: off on tenant-strict clusters); healthy
    nodes only, never a claimed home, at most `limit` + 1 (to tell a cut)."""
    if not images:
        return ()

    def candidates() -> Iterator[str]:
        yield from index.warm_nodes(images, namespace)
        if reported:
            yield from sorted(holding_all(images, snapshot.image_nodes))

    healthy = (n for n in dict.fromkeys(candidates()) if n not in claimed and snapshot.health(n) is Health.HEALTHY)
    return tuple(islice(healthy, limit + 1))


def vacant_homes(index: MemoryIndex, skip_owner: str | None, limit: int) -> tuple[str, ...]:
    return tuple(islice(index.vacant_homes(skip_owner), limit + 1))


def nothing_free(me: Load, snapshot: ClusterSnapshot, index: MemoryIndex, now: float) -> bool:
    """The free room left after the pods ahead of this one (pending or just admitted, at
    its priority or higher) holds no pod of its size: its scheduler will evict."""
    if me.npus <= 0:
        return False
    ahead = index.waiting.ahead(me.priority, me.npus, now)
    return index.room.slots(snapshot, index.node_used, me.npus, enough=ahead + 1) <= ahead


def free_room(me: Load, snapshot: ClusterSnapshot, index: MemoryIndex, limit: int) -> tuple[str, ...]:
    """The nodes a pod of the burst should take before a victim's nodes freed by eviction."""
    return index.room.nodes(snapshot, index.node_used, me.npus, index.is_vacant_home, limit)


@dataclass(frozen=True, slots=True)
class Victims:
    """Lower-priority workloads whose eviction alone would make room, and their priorities."""

    nodes: Mapping[str, Collection[str]]  # workload -> the nodes where it alone holds the room
    priorities: dict[str, int]


def eviction_victims(me: Load, index: MemoryIndex, snapshot: ClusterSnapshot) -> Victims:
    """From the index's view, updated for the nodes whose pods changed since the last
    admission (a pass over every accelerator pod took ~20 ms at 5,000 nodes)."""
    def victim_of(node: str) -> str | None:
        return victim_on(snapshot.nodes.get(node), index.node_used.get(node, 0), index.loads_on(node),
                         me.priority, me.npus)

    found = _tenants(index.eviction.victims(me.priority, me.npus, snapshot, index.occupants, victim_of), index.tenant)
    return Victims(found, {v: min(index.owner_priorities[v]) for v in found})


def every_victim(me: Load, index: MemoryIndex, snapshot: ClusterSnapshot) -> Victims:
    """The same, from one pass over every accelerator pod: what the view must agree with."""
    loads = index.node_loads()
    priorities: dict[str, int] = {}
    for node_loads in loads.values():
        for ld in node_loads:
            priorities[ld.owner_key] = min(priorities.get(ld.owner_key, ld.priority), ld.priority)
    found = _tenants(victims(snapshot, loads, index.node_used, me.priority, me.npus), index.tenant)
    return Victims(found, {v: priorities[v] for v in found})


def _tenants(found: Mapping[str, Collection[str]], tenant: str | None) -> Mapping[str, Collection[str]]:
    """The victims of the namespace the index is seen from (behaviour.md "Tenants"); all
    when seen whole. A new mapping: the eviction view's own is live."""
    return found if tenant is None else {v: nodes for v, nodes in found.items() if key_namespace(v) == tenant}


def displacement(me: Load, index: MemoryIndex, found: Victims, now: float,
                 evicts: bool) -> tuple[tuple[str, ...], str | None, Burst]:
    """(the victim's nodes, the victim, the burst counted). Every replica of a burst gets
    the term, not only those that find nothing free: which of them the scheduler leaves
    pending is its choice, and a term on full nodes changes nothing where room is free.
    Only the pods that will evict (`evicts`) use up the victim's nodes."""
    burst = index.burst(me, now)
    mem = index.owner(me.owner_key)
    mine = frozenset(mem.pool).union(mem.home_counts) if mem is not None else frozenset()
    victim = choose(found.nodes, found.priorities, index.disrupted(), burst, mine)
    if victim is None:
        return (), None, burst
    if victim != burst.victim:
        burst.victim, burst.sent = victim, 0
    burst.sent += evicts
    return tuple(sorted(found.nodes[victim])), victim, burst
