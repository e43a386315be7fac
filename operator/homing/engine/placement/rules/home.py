"""Home: the node the rank last ran on, while it is healthy and not a recent fault, and
(behaviour.md "Image labels") while it still holds the rank's images, when any node is
labelled for them: pulls first, so a home that lost the image to another workload ranks
with every other cold node and a node that holds it wins (rules/image_warm.py).

Weight `home` beats every domain sum, so the rank's own node wins over a block mate's domain
(engine/placement/weights.py checks any setting)."""
from __future__ import annotations

from homing.engine.model import Health, Operator, Term
from homing.engine.placement.rules.image_warm import holds
from homing.engine.placement.rules.term import term


def home_term(home: str | None, health: Health, faults: list[str], weight: int, hostname_key: str,
              image_keys: tuple[str, ...] = ()) -> Term | None:
    if not home or health is not Health.HEALTHY or home in faults:  # "" names no node
        return None
    return term("home", weight, hostname_key, Operator.IN, (home,), holds(image_keys))
