"""The rank step every pod of a ranked workload takes: its home node, keep clear of
siblings' homes, avoid faults. Ordinary NPU/GPU and vNPU pods take only this step;
topology kinds add their block domains (strategies/blocks.py) in between."""
from __future__ import annotations

from types import MappingProxyType

from homing.engine.memory.changes import active_faults
from homing.engine.memory.siblings import sibling_homes
from homing.engine.model import Health
from homing.engine.placement.rules.avoid_fault import avoid_term
from homing.engine.placement.rules.bounded import bounded
from homing.engine.placement.rules.claimed import claimed_terms
from homing.engine.placement.rules.displace import displace_term
from homing.engine.placement.rules.free_room import free_room_term
from homing.engine.placement.rules.home import home_term
from homing.engine.placement.rules.image_warm import image_warm_term
from homing.engine.placement.rules.keep_clear import keep_clear_term
from homing.engine.placement.strategies.base import Placement, RankContext
from homing.engine.placement.strategies.blocks import NO_DOMAINS, Domains
from homing.engine.placement.weights import free_room_weight

_REASONS = MappingProxyType({
    Health.HEALTHY: "home",
    Health.SUB_HEALTHY: "home-sub-healthy",
    Health.UNAVAILABLE: "home-unavailable",
    Health.UNHEALTHY: "home-unhealthy",
    Health.GONE: "home-gone",
})


def node_strategy(ctx: RankContext, domains: Domains = NO_DOMAINS) -> Placement:
    mem, w = ctx.memory, ctx.weights
    entry = mem.ranks.get(ctx.rank.key) if mem else None
    home = entry.node if entry else None
    faults = active_faults(entry, ctx.now, ctx.fault_memory)
    health = ctx.snapshot.health(home) if home else Health.GONE
    unhealthy_home = [home] if home and health is Health.UNHEALTHY else []
    avoided, cut_avoid = bounded([*unhealthy_home, *faults, *domains.unhealthy], ctx.max_values)
    siblings, cut_siblings = ctx.siblings or sibling_homes(mem, ctx.rank.index, home, ctx.max_values, ctx.runs)
    # siblings' homes first (nearest ranks), then any owner's vacant homes (behaviour.md "Beyond the home")
    clear, cut_clear = bounded([*siblings, *(n for n in ctx.beyond.vacant if n != home)], ctx.max_values)
    shunned = set(faults) | set(avoided)
    warm, cut_warm = bounded((n for n in ctx.beyond.warm if n not in shunned), ctx.max_values)
    victim_nodes = () if domains.terms else bounded((n for n in ctx.beyond.displace if n not in shunned), ctx.max_values)[0]
    free = bounded((n for n in ctx.beyond.free if n not in shunned), ctx.max_values)[0] if victim_nodes else ()
    # this rank's own fault nodes (a fault ranks below a claimed home), then the claimed homes
    keep_off, cut_claimed = bounded([*avoided, *ctx.beyond.claimed], ctx.max_values) if ctx.beyond.keep_off else ((), False)
    keys = ctx.beyond.image_keys
    home_t = home_term(home, health, faults, w.home, ctx.hostname_key, keys)
    # with image labels: every holder of the images but the claimed homes, this rank's faults and sick holders
    warm_t, cut_off = image_warm_term(warm, w.image_warm, ctx.hostname_key, keys,
                                      [*avoided, *faults, *ctx.beyond.claimed, *ctx.beyond.sick_holders], ctx.max_values)
    terms = [
        t
        for t in (
            home_t,
            *domains.terms,
            free_room_term(free, free_room_weight(w), ctx.hostname_key),
            displace_term(victim_nodes, w.displace, ctx.hostname_key),
            warm_t,
            keep_clear_term(clear, w.keep_clear, ctx.hostname_key),
            avoid_term(avoided, w.avoid_fault, ctx.hostname_key),
            *claimed_terms(keep_off, w.claimed, ctx.hostname_key),
        )
        if t is not None
    ]
    if home is None:
        reason = "no-memory"
    elif home in faults:
        reason = "home-faulted"
    else:
        reason = _REASONS[health]
    return Placement(
        terms=terms,
        reason=reason,
        home=home if home_t else None,
        domains=list(domains.names),
        avoided=avoided,
        truncated=cut_avoid or cut_siblings or cut_clear or (cut_off if keys else cut_warm) or cut_claimed or domains.truncated,
    )
