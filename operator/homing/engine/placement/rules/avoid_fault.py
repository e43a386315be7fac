"""Avoid: nodes this rank recently failed on (and an unhealthy home) lose `avoid_fault`
against every other node, so they rank last but stay schedulable."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def avoid_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("avoid", weight, hostname_key, Operator.NOT_IN, nodes)
