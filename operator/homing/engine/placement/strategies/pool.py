"""Rankless replicas: promise each new pod a different free home of the owner's pool."""
from __future__ import annotations

from collections.abc import Callable

from homing.config import Weights
from homing.engine.memory.entries import OwnerMemory
from homing.engine.model import ClusterSnapshot, Health, Term
from homing.engine.placement.beyond_home import NOTHING, BeyondHome
from homing.engine.placement.rules.bounded import bounded
from homing.engine.placement.rules.claimed import claimed_terms
from homing.engine.placement.rules.displace import displace_term
from homing.engine.placement.rules.free_room import free_room_term
from homing.engine.placement.rules.image_warm import image_warm_term
from homing.engine.placement.rules.keep_clear import keep_clear_term
from homing.engine.placement.rules.pool import other_homes_term, promised_home_term
from homing.engine.placement.rules.term import kept
from homing.engine.placement.strategies.base import Placement
from homing.engine.placement.weights import free_room_weight


def free_homes(mem: OwnerMemory, snapshot: ClusterSnapshot, taken: set[str], image_keys: tuple[str, ...] = ()) -> list[str]:
    """Healthy pool nodes nobody holds, warm first, then most recently used. Warm: carrying the
    pod's image labels where nodes are labelled for them, else as homing last saw it."""
    def warm(node: str, remembered: bool) -> bool:
        return all(node in snapshot.labelled[k] for k in image_keys) if image_keys else remembered

    candidates = [
        (not warm(node, entry.warm), -entry.last_used, node)
        for node, entry in mem.pool.items()
        if node not in taken and snapshot.health(node) is Health.HEALTHY
    ]
    return [node for _, _, node in sorted(candidates)]


def pool_strategy(
    mem: OwnerMemory | None,
    snapshot: ClusterSnapshot,
    taken: set[str],
    home_weight: int,
    other_weight: int,
    hostname_key: str,
    max_values: int,
    beyond: BeyondHome = NOTHING,
    weights: Weights | None = None,
    may_promise: Callable[[str], bool] | None = None,
) -> Placement:
    """`taken`: nodes occupied by a live pod of the owner or promised to a pending one.
    Beyond the pool (behaviour.md "Beyond the home"): image-warm nodes, and clear of other owners' vacant homes."""
    extra, cut_extra = _beyond_pool(beyond, weights, hostname_key, max_values)
    if mem is None or not mem.pool:
        return Placement(terms=extra, reason="no-memory", truncated=cut_extra)
    keys = beyond.image_keys
    free = free_homes(mem, snapshot, taken, keys)
    if not free:
        return Placement(terms=extra, reason="pool-exhausted", truncated=cut_extra)
    # Several replicas: only a node in this replica's share may be promised (engine/replicas/shares.py).
    mine = [n for n in free if may_promise is None or may_promise(n)]
    if not mine:
        others, cut = bounded(free, max_values)
        terms = kept((other_homes_term(others, other_weight, hostname_key, keys), *extra))
        return Placement(terms=terms, reason="pool-shared", truncated=cut or cut_extra)
    promised = mine[0]
    rest = [n for n in free if n != promised]
    others, cut = bounded(rest, max_values)
    terms = kept(
        (
            promised_home_term(promised, home_weight, hostname_key, keys),
            other_homes_term(others, other_weight, hostname_key, keys),
            *extra,
        )
    )
    return Placement(terms=terms, reason="pool", home=promised, truncated=cut or cut_extra, promise=promised)


def _beyond_pool(beyond: BeyondHome, w: Weights | None, hostname_key: str, max_values: int) -> tuple[list[Term], bool]:
    if w is None:
        return [], False
    warm, cut_warm = bounded(beyond.warm, max_values)
    clear, cut_clear = bounded(beyond.vacant, max_values)
    victim_nodes, _ = bounded(beyond.displace, max_values)
    free = bounded(beyond.free, max_values)[0] if victim_nodes else ()
    claimed, cut_claimed = bounded(beyond.claimed, max_values)
    warm_t, cut_off = image_warm_term(warm, w.image_warm, hostname_key, beyond.image_keys,
                                      [*beyond.claimed, *beyond.sick_holders], max_values)
    terms = kept((
        free_room_term(free, free_room_weight(w), hostname_key),
        displace_term(victim_nodes, w.displace, hostname_key),
        warm_t,
        keep_clear_term(clear, w.keep_clear, hostname_key),
        *claimed_terms(claimed, w.claimed, hostname_key),
    ))
    return terms, (cut_off if beyond.image_keys else cut_warm) or cut_clear or cut_claimed
