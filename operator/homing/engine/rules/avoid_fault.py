"""Avoid: nodes this rank recently failed on (and an unhealthy home) lose `avoid_fault`
(default 100) against every other node, so they rank last but stay schedulable."""
from __future__ import annotations

from homing.engine.model import Operator, Term


def avoid_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    if not nodes:
        return None
    return Term(role="avoid", weight=weight, key=hostname_key, operator=Operator.NOT_IN, values=nodes)
