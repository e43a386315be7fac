"""The shared block step of every topology kind: for each level, the block's home
domain as a weighted term, and the unhealthy nodes inside it to avoid."""
from __future__ import annotations

from dataclasses import dataclass

from homing.engine.model import Term
from homing.engine.placement.domains import home_domains
from homing.engine.placement.job_kinds.levels import JobTopology
from homing.engine.placement.rules.bounded import bounded
from homing.engine.placement.rules.domain import domain_term
from homing.engine.placement.strategies.base import RankContext


@dataclass(frozen=True, slots=True)
class Domains:
    terms: tuple[Term | None, ...] = ()  # None for a home domain whose expression kept no value
    names: tuple[str, ...] = ()  # "superPod=5", innermost first
    unhealthy: tuple[str, ...] = ()  # unhealthy nodes inside those domains
    truncated: bool = False


NO_DOMAINS = Domains()


def block_domains(ctx: RankContext, topology: JobTopology) -> Domains:
    levels = topology.levels[: len(ctx.weights.domains)]  # no terms beyond three levels
    if not levels:
        return NO_DOMAINS
    terms: list[Term | None] = []
    names: list[str] = []
    unhealthy: set[str] = set()
    cut = False
    snapshot = ctx.snapshot
    for weight, level, value in zip(ctx.weights.domains, levels, home_domains(ctx.memory, ctx.rank, levels, topology.group)):
        if value is None:
            continue
        expr = snapshot.domain_expr(level.name, value, ctx.hostname_key)
        if expr is None:
            continue  # every node of that domain is gone
        values, truncated = bounded(expr.values, ctx.max_values)
        terms.append(domain_term(level.name, expr, values, weight))
        names.append(f"{level.name}={value}")
        unhealthy |= snapshot.unhealthy & snapshot.members.get((level.name, value), set())
        cut = cut or truncated
    return Domains(tuple(terms), tuple(names), tuple(sorted(unhealthy)), cut)
