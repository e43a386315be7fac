"""behaviour.md "Memory" memory lifecycle as one pure step: a pod event (its view, the index, the
cluster snapshot, now) in; changes to the index and the effects to report out.

What counts as what:
- a *bind* is a tracked pod seen holding its node (a scheduler bound it there or it ran
  there: podview.placed_node), not ending; the rank's home moves there, a rankless pod's
  node joins the pool (only a new bind refreshes it). A pod that names a node it never
  held is live but holds nothing, waits for no scheduler and keeps no owner active;
- *warm* is a container started on that node;
- an *end* is judged once, at the first event that shows the pod ended (Succeeded,
  Failed, or deletion started) or at its deletion if no earlier event showed it: a fault
  when the node was unhealthy at that moment or the pod's own reason names the node;
  a cordoned node is maintenance, not a fault; a pod first seen already ended in a
  listing is judged by its own reason only (when it ended is unknown);
- a rankless pod's *promise* is held by the pending pod that carries it and ends when
  that pod binds, wherever it binds, or is deleted;
- an *outcome* is counted at the first watch event that shows a sent-home pod bound;
- a pod the listing after a re-list no longer has is gone (no phantom holds a home);
- a *vacant home* is one no live pod of its owner holds: a pod leaving makes it so, and at
  start-up the loaded memory and the first whole listing rebuild them all (rebuild_vacancies)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from homing.engine.identity.podview import PodView
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.memory.outcome import Outcome, classify
from homing.engine.model import ClusterSnapshot, Health

LISTED = None  # the event type of an object delivered by a listing, not a watch event
DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class Policy:
    """The lifecycle's settings (config.Lifetimes)."""

    fault_memory: float = 3600.0
    durable_seen_every: float = 3600.0  # behaviour.md "Memory": the stored lastSeen follows at least hourly


@dataclass(frozen=True, slots=True)
class Remembered:
    node: str
    moved_from: str | None


@dataclass(frozen=True, slots=True)
class Warmed:
    node: str


@dataclass(frozen=True, slots=True)
class Faulted:
    node: str
    reason: str


@dataclass(frozen=True, slots=True)
class Placed:
    """A pod sent home bound: where, against its home; and whether the node held its images."""

    home: str
    node: str
    outcome: Outcome
    image_warm: bool = False


@dataclass(frozen=True, slots=True)
class PlacedWarm:
    """A pod with no home, steered by image-warm (behaviour.md "Beyond the home"), bound where its images are."""

    node: str


Effect = Remembered | Warmed | Faulted | Placed | PlacedWarm


def observe(
    index: MemoryIndex,
    event: str | None,
    view: PodView,
    snapshot: ClusterSnapshot,
    now: float,
    policy: Policy,
    group: str | None = None,
) -> list[Effect]:
    """One watch event (or listed object, event None) of a tracked pod."""
    before = index.live.get(view.uid)
    if view.unplaced and before is not None and before.node is not None:
        # A pod keeps the node it held (spec.nodeName never changes) though its status may
        # stop showing it: a kubelet that rejects a bound pod rewrites its status bare.
        view = replace(view, node=before.node, unplaced=False)
    key = view.owner.key
    rank = view.rank.rank.key if view.rank.rank else None
    effects: list[Effect] = []
    if event == DELETED:
        if before is None or not before.judged:
            _judge_end(index, view, rank, snapshot, now, policy, effects, listed=False)
        index.pod_gone(view.uid)
        _left(index, key, before.node if before else view.node, now)
        if view.home and rank is None:
            index.promised.release(key, view.home, view.uid)
        index.touch(key, now, policy.durable_seen_every)
        if not index.has_live_pods(key):
            index.last_pod_gone(key, now)
        return effects

    ending = view.ended or view.terminating
    judged = before is not None and before.judged
    index.pod_seen(view.uid, LivePod(key, rank, view.node, view.terminating, judged, view.running, view.ended,
                                              view.generation, view.unplaced))
    index.touch(key, now, policy.durable_seen_every)
    if rank is None and view.home:
        if view.node or view.unplaced:  # not pending: only a scheduler would take the promise up
            index.promised.release(key, view.home, view.uid)
        elif not ending:
            index.promised.claim(key, view.home, view.uid, now)
    if view.node and not ending:
        _bound(index, event, view, rank, before, snapshot, now, group, effects)
    if ending and not judged:
        _judge_end(index, view, rank, snapshot, now, policy, effects, listed=event is LISTED and before is None)
        index.live[view.uid].judged = True
    if ending:
        _left(index, key, view.node, now)
    return effects


def _left(index: MemoryIndex, key: str, node: str | None, now: float) -> None:
    """A pod of the owner stopped holding `node`: if that is one of the owner's homes and
    no other pod of the owner holds it, the home is vacant (behaviour.md "Beyond the home")."""
    mem = index.owner(key)
    if node is None or mem is None or node in index.occupied_nodes(key):
        return
    if node in mem.home_counts or node in mem.pool:
        index.vacate(node, key, now)


def _bound(
    index: MemoryIndex,
    event: str | None,
    view: PodView,
    rank: str | None,
    before: LivePod | None,
    snapshot: ClusterSnapshot,
    now: float,
    group: str | None,
    effects: list[Effect],
) -> None:
    assert view.node
    new_bind = before is None or before.node != view.node
    mem = index.owner(view.owner.key)
    previous = mem.ranks[rank].node if mem is not None and rank in mem.ranks else None
    refresh = new_bind and event is not LISTED
    if index.record_bind(view.owner, rank, view.node, snapshot.topology(view.node), now, group, refresh):
        effects.append(Remembered(view.node, previous if previous != view.node else None))
    if event is not LISTED and new_bind:
        warm = held_images(index, snapshot, view.images, view.node, view.namespace)
        if view.home:
            busy = index.occupied_by_others(view.home, view.uid)
            outcome = classify(view.home, view.node, snapshot, busy, view.domains)
            _count(index, view.owner.key, outcome.result)
            effects.append(Placed(view.home, view.node, outcome, warm))
        elif warm and "image-warm" in view.prefer:
            effects.append(PlacedWarm(view.node))
    index.reoccupy(view.node, view.owner.key)
    if view.running:
        if index.mark_warm(view.owner, rank, view.node, now):
            effects.append(Warmed(view.node))
        if new_bind or (before is not None and not before.running):
            index.ran_images(view.images, view.node, now, view.namespace)


def held_images(index: MemoryIndex, snapshot: ClusterSnapshot, images: tuple[str, ...], node: str, namespace: str = "") -> bool:
    """Whether `node` held every one of `images` when the pod bound there."""
    reported = snapshot.nodes.get(node)
    if images and reported is not None and set(images) <= reported.images:
        return True
    return index.ran_here(images, node, namespace)


def _count(index: MemoryIndex, key: str, result: str) -> None:
    mem = index.owner(key)
    if mem is not None:
        setattr(mem.stats, result, getattr(mem.stats, result) + 1)
        index.dirty.add(key)


def _judge_end(
    index: MemoryIndex,
    view: PodView,
    rank: str | None,
    snapshot: ClusterSnapshot,
    now: float,
    policy: Policy,
    effects: list[Effect],
    listed: bool,
) -> None:
    """Fault or not, judged by the node's health now: the moment the pod ended."""
    if rank is None or view.node is None:
        return
    unhealthy = not listed and snapshot.health(view.node) is Health.UNHEALTHY
    if not (unhealthy or view.fault_reason):
        return
    if index.record_fault(view.owner.key, rank, view.node, now, policy.fault_memory):
        effects.append(Faulted(view.node, view.fault_reason or "node-unhealthy"))


def untracked(index: MemoryIndex, pod_uid: str, now: float) -> None:
    """A pod that is no longer in scope (orphaned, its namespace opted out): it stops
    counting as a live pod of its old owner."""
    gone = index.pod_gone(pod_uid)
    if gone is None:
        return
    _left(index, gone.owner_key, gone.node, now)
    if not index.has_live_pods(gone.owner_key):
        index.last_pod_gone(gone.owner_key, now)


def relisted(index: MemoryIndex, listed_uids: Iterable[str], now: float) -> list[str]:
    """After a re-list: every pod the listing lacks was deleted while the watch was away.
    Returns their UIDs. No fault is judged: when they ended is unknown."""
    keep = set(listed_uids)
    gone = [uid for uid in index.live if uid not in keep]
    for uid in gone:
        untracked(index, uid, now)
    for uid in [uid for uid in index.pod_node if uid not in keep]:
        index.occupy(uid, None)
    for uid in [uid for uid in index.waiting.pending if uid not in keep]:
        index.waiting.wait(uid, None)
    return gone


def rebuild_vacancies(index: MemoryIndex, now: float) -> int:
    """Start-up, once the loaded memory and the first whole LIST of pods are in (behaviour.md
    "Claimed homes"): every home, a rank's node or a pool entry, that no live pod of its
    owner holds is vacant. A vacancy is the memory's homes less what the live pods hold, so
    the memory plus one whole listing is all it takes: a process that watched the pods go
    knows no more (tests/engine/test_claims_rebuilt.py). Without this a new process, whose
    watch saw nobody leave, had no vacant homes, no claims, and its leader removed every
    deletion-cost mark that was correct before it.

    When a home was vacated is not stored, so a rebuilt one counts from `now`: a time too
    early would drop the claim of a gang evicted an hour ago from homes it held for a week
    (bound_at is when it came, not when it left); `now` keeps a claim at most one TTL longer
    (drop_old_vacancies). Among themselves they are ordered by the last time the memory saw
    a pod there (a rank's bind, a pool entry's last use), so "most recently vacated first"
    still reads sensibly. A home already vacant (the listing saw its pod terminating) keeps
    its time, unless a pod listed after that one holds it: the listing vacates as it goes,
    and a Succeeded or Failed pod still on the node holds it without binding there again.
    Returns how many homes it made vacant."""
    homes: dict[str, dict[str, float]] = {}
    for key, mem in index.owners.items():
        held = index.occupied_nodes(key)
        for node in [n for n in index.vacant_by_owner.get(key, ()) if n in held]:
            index.reoccupy(node, key)
        known = index.vacant_by_owner.get(key, ())
        last = homes[key] = {}
        for entry in mem.ranks.values():
            if entry.node not in held and entry.node not in known:
                at = last.get(entry.node)
                last[entry.node] = entry.bound_at if at is None else max(at, entry.bound_at)
        for node, pooled in mem.pool.items():
            if node not in held and node not in known:
                at = last.get(node)
                last[node] = pooled.last_used if at is None else max(at, pooled.last_used)
    return index.vacancies.vacate_all(homes, now)
