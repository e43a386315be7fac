"""Checks that a set of weights keeps the order of node classes (docs/behaviour.md,
"Weights").

Kubernetes adds the weights of the matched preferred terms on each node and then
normalises to 0..100 with integer division by the best node's sum. Two classes stay
apart after that when their sums differ by at least max_sum / 100. Where the scheduler's
other scores work against the order (a claimed home holds the image: image locality
favours it), the classes must stay apart by enough normalised points to outweigh them
in the shipped scheduler configurations (engine/placement/scheduler_scores.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from homing.engine.placement.rules.term import MAX_TERM_WEIGHT
from homing.engine.placement.scheduler_scores import MAX_NODE_SCORE, points_to_win

if TYPE_CHECKING:
    from homing.config import Weights


@dataclass(frozen=True)
class ScoreClass:
    name: str
    low: int
    high: int
    whole_score: bool = False  # must stay above the next class against the scheduler's other scores


def node_classes(w: Weights, levels: int, claimed: bool = False) -> list[ScoreClass]:
    """The classes of the order, best first, with the range of sums each can get.
    Inside a level: image-warm and clear of vacant homes, image-warm, clear, the rest.
    `claimed`: the pod carries the claimed term (NotIn claimed homes and its fault nodes):
    every claimed home then ranks below every other node, and faults below them."""
    domains = w.domains[:levels]
    warm, clear, avoid = w.image_warm, w.keep_clear, w.avoid_fault
    c = w.claimed if claimed else 0
    extras = (("warm-clear", warm + clear), ("warm", warm), ("clear", clear), ("rest", 0))
    top = warm + clear
    classes = [ScoreClass("home", w.home + clear + c + avoid, w.home + sum(domains) + top + c + avoid)]
    for i in range(levels):
        inside = sum(domains[i:])  # domains nest: a node in level i is in every outer level
        classes += [ScoreClass(f"level{i + 1}-{name}", inside + x + c + avoid, inside + x + c + avoid) for name, x in extras]
    classes += [ScoreClass(f"elsewhere-{name}", x + c + avoid, x + c + avoid) for name, x in extras]
    if not claimed:
        classes.append(ScoreClass("fault", 0, sum(domains) + top))
        return classes
    # A claimed home is nobody's image-warm and is a vacant home (no clear): domains and avoid only.
    classes[-1] = ScoreClass(classes[-1].name, classes[-1].low, classes[-1].high, whole_score=True)
    classes += [ScoreClass(f"level{i + 1}-claimed", sum(domains[i:]) + avoid, sum(domains[i:]) + avoid) for i in range(levels)]
    classes.append(ScoreClass("elsewhere-claimed", avoid, avoid))
    classes.append(ScoreClass("fault", 0, sum(domains) + clear))  # fault nodes are listed in the claimed term too
    return classes


def order_violations(w: Weights) -> list[str]:
    problems: list[str] = []
    every = [w.home, *w.domains, w.image_warm, w.keep_clear, w.displace, free_room_weight(w), w.avoid_fault,
             w.pool_home, w.pool_other, w.claimed]
    if any(x <= 0 for x in every):
        problems.append("every weight must be positive")
    if any(x > MAX_TERM_WEIGHT for x in every if x is not w.claimed):
        problems.append("Kubernetes caps a preferred term's weight at 100")
    if w.claimed > 3 * MAX_TERM_WEIGHT:
        problems.append("claimed is carried by at most three terms (300)")
    if len(w.domains) > 3:
        problems.append("at most three domain levels get terms")
    if w.pool_home <= w.pool_other:
        problems.append("pool_home must exceed pool_other")
    if problems:
        return problems
    # Displacement is given only to pods without domain terms, where it is one more level.
    checks = [(f"{levels} domain level(s)", w, levels, claimed)
              for levels in range(len(w.domains) + 1) for claimed in (False, True)]
    checks += [("displacement", w.model_copy(update={"domains": [w.displace]}), 1, claimed) for claimed in (False, True)]
    problems += _free_room_violations(w)
    to_win = points_to_win()
    for what, weights, levels, claimed in checks:
        classes = node_classes(weights, levels, claimed)
        best = classes[0].high
        for better, worse in zip(classes, classes[1:]):
            points = to_win if better.whole_score else 1
            gap = max(1, -(-points * best // MAX_NODE_SCORE))  # ceil(points * best / 100)
            if better.low - worse.high < gap:
                against = " against the scheduler's other scores" if better.whole_score else ""
                problems.append(
                    f"with {what}{' and claimed homes' if claimed else ''}, {better.name} (from {better.low}) "
                    f"does not stay {gap} above {worse.name} (up to {worse.high}){against}"
                )
    return problems


def free_room_weight(w: Weights) -> int:
    """The configured free-room weight, or its default: displace + half of image-warm."""
    return w.free_room if w.free_room is not None else w.displace + max(1, w.image_warm // 2)


def _free_room_violations(w: Weights) -> list[str]:
    """A free node (free room) against a victim's node (displace), at equal keep-clear:
    the free one first, unless the victim's node alone is warm with the pod's image."""
    free = free_room_weight(w)
    best = node_classes(w.model_copy(update={"domains": [w.displace]}), 1, claimed=True)[0].high + free
    gap = max(1, -(-best // MAX_NODE_SCORE))
    if free - w.displace < gap or w.displace + w.image_warm - free < gap:
        return [f"free_room ({free}) must stay {gap} above displace ({w.displace}) and {gap} below "
                f"displace + image_warm ({w.displace + w.image_warm})"]
    return []
