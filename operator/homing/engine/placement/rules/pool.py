"""Rankless pods (Deployment replicas): the promised home first (`pool_home`), then any
other free warm node of the workload (`pool_other`, below it): each holds the image."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def promised_home_term(node: str | None, weight: int, hostname_key: str) -> Term | None:
    if not node:  # None or "": no node to promise
        return None
    return term("home", weight, hostname_key, Operator.IN, (node,))


def other_homes_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("pool", weight, hostname_key, Operator.IN, nodes)
