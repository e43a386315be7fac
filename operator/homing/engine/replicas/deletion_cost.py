"""Scale-in frees the homes others wait for (docs/behaviour.md, "Deletion cost"). Terms
are fixed when a pod is created, hours before a displaced gang is placed again; which
replicas a ReplicaSet keeps at scale-in is its own choice, and one it keeps on the gang's
home costs the gang that home. The ReplicaSet deletes lower deletion costs first, so a
replica on another workload's claimed home is marked with a cost below any sibling's.

The marks are also ordered: the homes of the workload its scheduler will place first are
freed first. A scale-in is deleted over seconds (the controller manager's API rate), and
a gang is placed as soon as enough nodes are idle, whichever they are; freed in the
scheduler's own order, the idle nodes are the next gang's homes when it is placed.

homing's marks are one band of values near the int32 floor: a pod carrying any other cost
carries its user's, which homing never writes over nor removes; after a restart the marks
are still recognised.

Only a claim of the replica's own namespace marks it, unless tenants share nodes
(behaviour.md "Tenants"): which of a tenant's replicas a scale-in removes is not another
tenant's to decide."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from homing.engine.model import key_namespace
from homing.engine.placement.job_kinds.facts import group_name

ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
MARK_FLOOR = -2147483000  # near the int32 floor the controller parses: below any cost a user sets
MARK_BAND = 1000  # values MARK_FLOOR .. MARK_FLOOR + 999 are homing's; more waiting owners share the floor
MARK = str(MARK_FLOOR)


def is_mark(cost: str | None) -> bool:
    """Whether a deletion cost is one homing writes."""
    try:
        return cost is not None and MARK_FLOOR <= int(cost) < MARK_FLOOR + MARK_BAND
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class Replica:
    """A bound, live, in-scope pod whose controller is a ReplicaSet."""

    namespace: str
    name: str
    owner_key: str
    node: str
    cost: str | None  # its deletion-cost annotation, if any


@dataclass(frozen=True, slots=True)
class Queued:
    """A pending pod as its scheduler orders it: higher priority first, then the earlier
    creation of its pod group (looked up when the order is asked for: Volcano's job controller
    deletes a restarted job's group and creates it again) or, without a known group, its own."""

    owner_key: str
    priority: int
    since: float  # the pod's own creation
    group: tuple[str, str] | None = None  # (namespace, pod group) when it names one


@dataclass(frozen=True, slots=True)
class Mark:
    uid: str
    namespace: str
    name: str
    value: str | None  # a mark to set, None to remove homing's mark
    node: str
    claimant: str | None = None  # the owner waiting for the node, when set


def queued(pod: dict[str, Any], owner_key: str, priority: int) -> Queued:
    """A pending pod's entry in its scheduler's queue."""
    meta = pod.get("metadata") or {}
    group = group_name(pod)
    return Queued(owner_key, priority, _epoch(meta.get("creationTimestamp")) or float("inf"),
                  (meta.get("namespace") or "", group) if group else None)


def _epoch(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def queue_order(queued: Iterable[Queued], podgroups: Mapping[tuple[str, str], dict[str, Any]]) -> list[str]:
    """Owners with pending pods in the order their scheduler takes them. Volcano orders
    equal-priority jobs by their PodGroup's creation, then by "<namespace>/<pod group>"."""
    first: dict[str, tuple[int, float, str]] = {}
    for q in queued:
        podgroup = podgroups.get(q.group) if q.group else None
        created = _epoch(((podgroup or {}).get("metadata") or {}).get("creationTimestamp"))
        key = (-q.priority, created, "/".join(q.group)) if q.group and created is not None else (-q.priority, q.since, q.owner_key)
        if q.owner_key not in first or key < first[q.owner_key]:
            first[q.owner_key] = key
    return sorted(first, key=lambda owner: (first[owner], owner))


def mark_values(claimants: Iterable[str], order: list[str], current: Mapping[str, int] | None = None) -> dict[str, str]:
    """Each waiting owner's mark, increasing along `order` (owners with nothing pending
    last). Owners keep the marks they carry (`current`) while those still increase along
    the order, and a newcomer takes a value between its neighbours': the queue changes
    many times a morning, and re-marking every replica each time would spend the patch
    budget for minutes and leave the order half-written when the scale-in comes."""
    claimants = set(claimants)
    ranked = [o for o in order if o in claimants] + sorted(claimants - set(order))
    current = current or {}
    kept = _increasing(ranked, current)
    values: dict[str, int] = {}
    lo, pending = MARK_FLOOR - 1, []
    for owner in [*ranked, None]:
        if owner is not None and owner not in kept:
            pending.append(owner)
            continue
        hi = current[owner] if owner is not None else MARK_FLOOR + MARK_BAND
        if pending and hi - lo - 1 < len(pending):
            return _spread(ranked)  # no room between the neighbours: space everyone out again
        for i, o in enumerate(pending):
            values[o] = lo + (i + 1) * (hi - lo) // (len(pending) + 1)
        if owner is not None:
            values[owner] = lo = hi
        pending = []
    return {o: str(v) for o, v in values.items()}


def _increasing(ranked: list[str], current: Mapping[str, int]) -> set[str]:
    """The most owners whose current marks already increase along the order (the longest
    increasing subsequence)."""
    seq = [(o, current[o]) for o in ranked if o in current and MARK_FLOOR <= current[o] < MARK_FLOOR + MARK_BAND]
    best: list[list[tuple[str, int]]] = []  # best[k]: an increasing run of length k+1 ending lowest
    for item in seq:
        k = next((i for i, run in enumerate(best) if run[-1][1] >= item[1]), len(best))
        run = (best[k - 1] if k else []) + [item]
        if k == len(best):
            best.append(run)
        else:
            best[k] = run
    return {o for o, _ in best[-1]} if best else set()


def _spread(ranked: list[str]) -> dict[str, str]:
    n = len(ranked)
    return {o: str(MARK_FLOOR + (i * MARK_BAND // n if n <= MARK_BAND else min(i, MARK_BAND - 1)))
            for i, o in enumerate(ranked)}


def waiting_for(r: Replica, claimants: Mapping[str, set[str]], shared: bool = False) -> set[str]:
    """The owners other than the replica's own that wait for its node: of its namespace
    only, unless tenants share nodes (`shared`)."""
    waiting = set(claimants.get(r.node, ())) - {r.owner_key}
    return waiting if shared else {o for o in waiting if key_namespace(o) == r.namespace}


def current_marks(replicas: Iterable[tuple[str, Replica]], claimants: Mapping[str, set[str]],
                  shared: bool = False) -> dict[str, int]:
    """The mark each waiting owner carries now: the commonest homing mark on replicas bound
    to homes only that owner waits for."""
    seen: dict[str, dict[int, int]] = {}
    for _, r in replicas:
        waiting = waiting_for(r, claimants, shared)
        if len(waiting) == 1 and is_mark(r.cost):
            counts = seen.setdefault(next(iter(waiting)), {})
            counts[int(r.cost)] = counts.get(int(r.cost), 0) + 1  # type: ignore[arg-type]
    return {o: max(c, key=lambda v: (c[v], -v)) for o, c in seen.items()}


def marks(replicas: Iterable[tuple[str, Replica]], claimants: Mapping[str, set[str]],
          order: list[str] | None = None, shared: bool = False) -> list[Mark]:
    """The changes that bring the marks in line with the claims: set on a replica whose node
    another owner claims (the first of them in `order` decides its value), removed from one
    whose node nobody else claims any more. `shared`: tenants share nodes, and another
    namespace's claim counts (config.Tenancy)."""
    replicas = list(replicas)
    waiting_on = {uid: waiting_for(r, claimants, shared) for uid, r in replicas}
    values = mark_values(set().union(*waiting_on.values()) if waiting_on else set(), order or [],
                         current_marks(replicas, claimants, shared))
    out: list[Mark] = []
    for uid, r in replicas:
        waiting = waiting_on[uid]
        mine = is_mark(r.cost)
        if waiting and (r.cost is None or mine):
            first = min(waiting, key=lambda o: (int(values[o]), o))
            if r.cost != values[first]:
                out.append(Mark(uid, r.namespace, r.name, values[first], r.node, first))
        elif not waiting and mine:
            out.append(Mark(uid, r.namespace, r.name, None, r.node))
    return out
