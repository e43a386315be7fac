"""Domain: a node in the block's home domain at one level (the super-pod, rack,
multilevel group or HyperNode its block mates held). Weights `domains[k]` (50, 25,
12 from the innermost out) sum to 87 < home's 100 and each exceeds keep-clear's 5,
so own home > block domain > sibling's home in the domain > elsewhere."""
from __future__ import annotations

from homing.engine.model import DomainExpr, Operator, Term


def domain_term(level: str, expr: DomainExpr, values: tuple[str, ...], weight: int) -> Term:
    return Term(role=f"domain:{level}", weight=weight, key=expr.key, operator=Operator.IN, values=values)
