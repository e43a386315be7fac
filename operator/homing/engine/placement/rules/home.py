"""Home: the node the rank last ran on, while it is healthy and not a recent fault.

Weight `home` beats every domain sum, so the rank's own node wins over a block mate's domain
(engine/placement/weights.py checks any setting)."""
from __future__ import annotations

from homing.engine.model import Health, Operator, Term
from homing.engine.placement.rules.term import term


def home_term(home: str | None, health: Health, faults: list[str], weight: int, hostname_key: str) -> Term | None:
    if not home or health is not Health.HEALTHY or home in faults:  # "" names no node
        return None
    return term("home", weight, hostname_key, Operator.IN, (home,))
