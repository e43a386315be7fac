"""Rankless pods (Deployment replicas): the promised home first (`pool_home`), then any
other free home of the workload (`pool_other`, below it). Where nodes carry image labels
(behaviour.md "Image labels"), both ask that the home still hold the pod's images, as a rank's
home term does: a pool home that lost them ranks with any other cold node."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.image_warm import holds
from homing.engine.placement.rules.term import term


def promised_home_term(node: str | None, weight: int, hostname_key: str, image_keys: tuple[str, ...] = ()) -> Term | None:
    if not node:  # None or "": no node to promise
        return None
    return term("home", weight, hostname_key, Operator.IN, (node,), holds(image_keys))


def other_homes_term(nodes: tuple[str, ...], weight: int, hostname_key: str, image_keys: tuple[str, ...] = ()) -> Term | None:
    return term("pool", weight, hostname_key, Operator.IN, nodes, holds(image_keys))
