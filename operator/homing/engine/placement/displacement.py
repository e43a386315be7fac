"""behaviour.md "Beyond the home", displace few workloads: a pod that fits on no free node makes its scheduler
preempt or reclaim. A gang that loses one pod restarts whole, so the replicas of one
burst should all prefer the nodes of ONE lower-priority workload: one already disrupted
first, else the smallest that covers the burst, else the lowest priority, until its
nodes are used up. Pure: the index supplies the loads; the strategy turns the chosen
nodes into a term."""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from homing.engine.memory.loads import Burst, Load
from homing.engine.model import ClusterSnapshot, Health, NodeState


def free_slots(snapshot: ClusterSnapshot, used: Mapping[str, int], npus: int, enough: int) -> int:
    """How many pods of `npus` the healthy nodes' free accelerators hold, counted up to
    `enough`. A node that reports no accelerators (a CPU node) holds none."""
    slots = 0
    for name, state in snapshot.nodes.items():
        if state.health is not Health.HEALTHY or state.npus is None:
            continue
        slots += max(0, state.npus - used.get(name, 0)) // npus
        if slots >= enough:
            return slots
    return slots


def free_nodes(snapshot: ClusterSnapshot, used: Mapping[str, int], npus: int, skip: Callable[[str], bool],
               limit: int) -> tuple[str, ...]:
    """Healthy nodes with room for a pod of `npus` now, not `skip`ped, by name, at most
    `limit` + 1 (to tell a cut)."""
    fitting = sorted(
        name for name, state in snapshot.nodes.items()
        if state.health is Health.HEALTHY and state.npus is not None and state.npus - used.get(name, 0) >= npus
        and not skip(name)
    )
    return tuple(fitting[: limit + 1])


def victims(
    snapshot: ClusterSnapshot,
    node_loads: Mapping[str, Iterable[Load]],
    used: Mapping[str, int],
    priority: int,
    npus: int,
) -> dict[str, list[str]]:
    """Lower-priority workloads and the healthy nodes where displacing that one workload
    alone frees enough accelerators for the pod."""
    out: dict[str, list[str]] = {}
    for node, loads in node_loads.items():
        owner = victim_on(snapshot.nodes.get(node), used.get(node, 0), list(loads), priority, npus)
        if owner is not None:
            out.setdefault(owner, []).append(node)
    return {owner: sorted(nodes) for owner, nodes in out.items()}


def victim_on(state: NodeState | None, used: int, loads: list[Load], priority: int, npus: int) -> str | None:
    """The one lower-priority workload whose eviction alone frees the node for the pod."""
    if state is None or state.health is not Health.HEALTHY or state.npus is None:
        return None
    free = state.npus - used
    if free >= npus:
        return None  # room already: no eviction (and a term there would pack next to the victim)
    lower = {ld.owner_key for ld in loads if ld.priority < priority}
    if len(lower) != 1:
        return None  # free already, or it would take two workloads' pods
    (owner,) = lower
    freed = sum(ld.npus for ld in loads if ld.owner_key == owner)
    return owner if free + freed >= npus else None


def choose(
    candidates: Mapping[str, Collection[str]],
    priorities: Mapping[str, int],
    disrupted: set[str],
    burst: Burst,
    mine: frozenset[str] = frozenset(),
) -> str | None:
    """The burst's victim: the one it already chose while its nodes last; else one already
    disrupted, else the one on most of the pod's own homes (`mine`: warm for it, and the
    tide displaces the same workload each day, whose image stays on its nodes), else the
    smallest that covers the burst, else the lowest priority."""
    if burst.victim is not None and burst.victim in candidates and burst.sent < len(candidates[burst.victim]):
        return burst.victim
    if burst.victim is not None:
        burst.used.add(burst.victim)
    left = {v: nodes for v, nodes in candidates.items() if v not in burst.used}
    if not left:
        return None

    def rank(v: str) -> tuple[bool, int, bool, int, int, str]:
        size = len(left[v])
        covers = size >= burst.count
        return (v not in disrupted, -len(mine.intersection(left[v])), not covers, size if covers else -size,
                priorities.get(v, 0), v)

    return min(left, key=rank)
