"""Checks that a set of weights keeps the SPEC 4.3 order of node classes.

Kubernetes adds the weights of the matched preferred terms on each node and then
normalises to 0..100 with integer division by the best node's sum. Two classes stay
apart after that when their sums differ by at least max_sum / 100.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from homing.config import Weights

MAX_NODE_SCORE = 100  # Kubernetes framework.MaxNodeScore


@dataclass(frozen=True)
class ScoreClass:
    name: str
    low: int
    high: int


def node_classes(w: "Weights", levels: int) -> list[ScoreClass]:
    """The classes of SPEC 4.3 and 4.4, best first, with the range of sums each can get.
    Inside a level: image-warm and clear of vacant homes, image-warm, clear, the rest."""
    domains = w.domains[:levels]
    warm, clear, avoid = w.image_warm, w.keep_clear, w.avoid_fault
    extras = (("warm-clear", warm + clear), ("warm", warm), ("clear", clear), ("rest", 0))
    top = warm + clear
    classes = [ScoreClass("home", w.home + clear + avoid, w.home + sum(domains) + top + avoid)]
    for i in range(levels):
        inside = sum(domains[i:])  # domains nest: a node in level i is in every outer level
        classes += [ScoreClass(f"level{i + 1}-{name}", inside + x + avoid, inside + x + avoid) for name, x in extras]
    classes += [ScoreClass(f"elsewhere-{name}", x + avoid, x + avoid) for name, x in extras]
    classes.append(ScoreClass("fault", 0, sum(domains) + top))
    return classes


def order_violations(w: "Weights") -> list[str]:
    problems: list[str] = []
    every = [w.home, *w.domains, w.image_warm, w.keep_clear, w.displace, free_room_weight(w), w.avoid_fault,
             w.pool_home, w.pool_other]
    if any(x <= 0 for x in every):
        problems.append("every weight must be positive")
    if any(x > 100 for x in every):
        problems.append("Kubernetes caps a preferred term's weight at 100")
    if len(w.domains) > 3:
        problems.append("at most three domain levels get terms")
    if w.pool_home <= w.pool_other:
        problems.append("pool_home must exceed pool_other")
    if problems:
        return problems
    # Displacement is given only to pods without domain terms, where it is one more level.
    checks = [(f"{levels} domain level(s)", w, levels) for levels in range(len(w.domains) + 1)]
    checks.append(("displacement", w.model_copy(update={"domains": [w.displace]}), 1))
    problems += _free_room_violations(w)
    for what, weights, levels in checks:
        classes = node_classes(weights, levels)
        best = classes[0].high
        gap = max(1, -(-best // MAX_NODE_SCORE))  # ceil(best / 100)
        for better, worse in zip(classes, classes[1:]):
            if better.low - worse.high < gap:
                problems.append(
                    f"with {what}, {better.name} (from {better.low}) does not stay "
                    f"{gap} above {worse.name} (up to {worse.high})"
                )
    return problems


def free_room_weight(w: "Weights") -> int:
    """The configured free-room weight, or its default: displace + half of image-warm."""
    return w.free_room if w.free_room is not None else w.displace + max(1, w.image_warm // 2)


def _free_room_violations(w: "Weights") -> list[str]:
    """A free node (free room) against a victim's node (displace), at equal keep-clear:
    the free one first, unless the victim's node alone is warm with the pod's image."""
    free = free_room_weight(w)
    best = node_classes(w.model_copy(update={"domains": [w.displace]}), 1)[0].high + free
    gap = max(1, -(-best // MAX_NODE_SCORE))
    if free - w.displace < gap or w.displace + w.image_warm - free < gap:
        return [f"free_room ({free}) must stay {gap} above displace ({w.displace}) and {gap} below "
                f"displace + image_warm ({w.displace + w.image_warm})"]
    return []
