"""Free room first (behaviour.md "Beyond the home", decided in docs/design.md): a replica that carries the
displace term also prefers the homes of owners waiting at a lower priority (behaviour.md
"Claimed homes", pulls first) and the nodes free when it was admitted, nobody's vacant home.
Once a sibling's eviction frees the victim's nodes, a replica still pending would otherwise
take them (displace and keep-clear against keep-clear alone) while free room is left: they are
the homes the evicted gang comes back to. Weight `free_room` is above `displace` and below
`displace` + `image_warm`: a victim node warm with the pod's image wins."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def free_room_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("free-room", weight, hostname_key, Operator.IN, nodes)
