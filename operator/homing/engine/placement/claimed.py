"""Claimed homes (docs/behaviour.md, "Claimed homes"): a vacant home whose rank or pool
member is expected back. Another pod taking it saves no pull — the one expected back
pulls instead — and a home is lost, so every pod keeps off them.

- A ranked owner that is still active (some pod of it exists and has not ended, or its
  pods were deleted moments ago: MemoryIndex.active) claims every home none of its live
  pods holds. The admitting pod's own owner is active by
  definition: it is creating a pod, whether or not its siblings exist yet.
- A rankless pool claims as many of its vacant homes as it has pending pods: the ones
  promised to those pods first, then the warmest, most recently used.
"""
from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex

Claims = dict[str, tuple[str, ...]]  # claimed home -> its claimants, most recently vacated first


def own_claims(index: MemoryIndex, owner_key: str, siblings: tuple[str, ...], limit: int,
               generation: int | None = None) -> tuple[str, ...]:
    """The siblings' homes (as the rank's sibling walk found them) that none of the
    owner's live pods holds. `generation`: the admitted pod's; a pod of an earlier one holds
    nothing, though homing may not have seen it go (a gang restart deletes it first)."""
    if not siblings:
        return ()
    held = index.occupied_nodes(owner_key, generation)
    return tuple(islice((n for n in siblings if n not in held), limit + 1))


def pool_claims(index: MemoryIndex, mem: OwnerMemory, now: float) -> set[str]:
    """The pool's vacant homes its pending pods are expected on."""
    pending = index.pending_count(mem.owner.key)
    if pending == 0:
        return set()
    held = index.occupied_nodes(mem.owner.key)
    promised = {n for n in index.promised.nodes(mem.owner.key, now) if n not in held}
    rest = sorted((n for n in mem.pool if n not in held and n not in promised),
                  key=lambda n: (not mem.pool[n].warm, -mem.pool[n].last_used, n))
    return promised | set(rest[: max(0, pending - len(promised))])


def claims(index: MemoryIndex, now: float, skip_owner: str | None = None) -> Iterator[tuple[str, str]]:
    """(node, owner key) for every claimed home, most recently vacated first (one node's
    claimants in the order they vacated it).

    Only owners that can claim are looked at: an active ranked owner, or a pool with pending
    pods. The others' vacant homes are most of them where a cluster keeps a long memory (a
    restarted process finds every home no live pod holds vacant: 980,000 of a million ranks
    at 5,000 nodes), and walking them on every admission and every pass of the scale-in marks
    took more than half the operator's CPU there. So the cost is one check per owner with a
    vacant home, one per claimed home, and one per node vacated, not one per vacant home.
    `skip_owner`: an owner whose claims are left out (the admitted pod's, which reads its
    own from its siblings)."""
    claimants: dict[str, list[str]] = {}  # node -> the owners claiming it
    for key, nodes in index.vacant_by_owner.items():
        mem = index.owners.get(key) if key != skip_owner else None
        if mem is None:
            continue
        claimed = {n for n in nodes if n in mem.home_counts} if index.active(key, now) else set()
        if mem.pool and index.pending_count(key):
            claimed.update(n for n in pool_claims(index, mem, now) if n in nodes and n in mem.pool and n not in mem.home_counts)
        for node in claimed:
            claimants.setdefault(node, []).append(key)
    if not claimants:
        return
    since = index.vacancies.since
    for node in reversed(index.vacated_order):
        keys = claimants.get(node)
        if keys:
            yield from ((node, key) for key in sorted(keys, key=lambda k: (since(node, k), k)))


def others_claims(index: MemoryIndex, skip_owner: str, now: float) -> Claims:
    """Every home other owners claim, most recently vacated first, with its claimants: one
    pass per admission, handed to each rule below."""
    out: dict[str, list[str]] = {}
    for node, key in claims(index, now, skip_owner):
        out.setdefault(node, []).append(key)
    return {node: tuple(keys) for node, keys in out.items()}


def yielded_claims(index: MemoryIndex, others: Claims, priority: int, limit: int) -> tuple[str, ...]:
    """Other owners' claimed homes that a pod of `priority` takes before it displaces anyone
    (behaviour.md "Claimed homes", pulls first): the homes of owners whose pods wait at a lower
    priority. Its scheduler places it before them, so they cannot come back first; a home of
    theirs taken costs them at most one move, a running workload displaced costs every pod of
    it a restart and a pull. At most `limit` + 1, most recently vacated first."""
    out: list[str] = []
    for node, keys in others.items():
        for key in keys:
            waits_at = index.waiting.priority(key)
            if waits_at is not None and waits_at < priority:
                out.append(node)
                break
        if len(out) > limit:
            break
    return tuple(out)


def held_for_a_restart(index: MemoryIndex, others: Claims, now: float) -> set[str]:
    """Others' claimed homes whose every claimant is expected back by the restart hold alone
    (MemoryIndex.held_only): no pod of theirs exists. Such a claim yields to a pod that the home
    is warm for (behaviour.md "Claimed homes", pulls first)."""
    return {node for node, keys in others.items() if all(index.held_only(key, now) for key in keys)}


def claimants_by_node(index: MemoryIndex, now: float) -> dict[str, set[str]]:
    """Every claimed home and the owners waiting for it (the scale-in marks)."""
    out: dict[str, set[str]] = {}
    for node, key in claims(index, now):
        out.setdefault(node, set()).add(key)
    return out


def claimed_homes(index: MemoryIndex, owner_key: str, siblings: tuple[str, ...], own_home: str | None,
                  others: Claims, limit: int, generation: int | None = None) -> tuple[str, ...]:
    """Every claimed home the admitted pod should keep off, most relevant first (its own
    siblings', then others'), at most `limit` + 1 (to tell a cut). A rankless pod's own pool
    is left to its promises: its replicas hold the same image, so they are interchangeable.
    `siblings`: the rank's sibling homes as its sibling walk found them (none for a rankless pod);
    `others`: other owners' claims (`others_claims`); `generation`: the admitted pod's restart
    (engine/identity/generation.py)."""
    mine = own_claims(index, owner_key, siblings, limit, generation)
    return tuple(islice(dict.fromkeys((*mine, *(n for n in others if n != own_home))), limit + 1))
