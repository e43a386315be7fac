"""Rankless pods (Deployment replicas): the promised home first (`pool_home`, 100), then
any other free warm node of the workload (`pool_other`, 50): each holds the image."""
from __future__ import annotations

from homing.engine.model import Operator, Term


def promised_home_term(node: str | None, weight: int, hostname_key: str) -> Term | None:
    if node is None:
        return None
    return Term(role="home", weight=weight, key=hostname_key, operator=Operator.IN, values=(node,))


def other_homes_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    if not nodes:
        return None
    return Term(role="pool", weight=weight, key=hostname_key, operator=Operator.IN, values=nodes)
