"""Domain: a node in the block's home domain at one level (the super-pod, rack,
multilevel group or HyperNode its block mates held). Weights `domains[k]`, innermost first,
sum to less than `home` and each exceeds `keep_clear`, so own home > block domain > sibling's
home in the domain > elsewhere (engine/placement/weights.py checks any setting)."""
from __future__ import annotations

from homing.engine.model import DomainExpr, Operator, Term
from homing.engine.placement.rules.term import term


def domain_term(level: str, expr: DomainExpr, values: tuple[str, ...], weight: int) -> Term | None:
    """None when no value is left (a bound of 0, a selector with no values): never `In []`."""
    return term(f"domain:{level}", weight, expr.key, Operator.IN, values)
