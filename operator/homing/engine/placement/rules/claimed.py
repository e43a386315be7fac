"""Claimed homes: keep off the vacant homes other pods are expected back on, and off the
rank's own fault nodes. Weight `claimed` exceeds the domain sum by more than the scheduler's
image locality can add to a warm node (engine/placement/weights.py), so a claimed home ranks
below every other node; past Kubernetes' cap on one term, more terms carry it."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import MAX_TERM_WEIGHT, kept, term


def claimed_terms(nodes: tuple[str, ...], weight: int, hostname_key: str) -> list[Term]:
    full, rest = divmod(weight, MAX_TERM_WEIGHT)
    parts = [MAX_TERM_WEIGHT] * full + ([rest] if rest else [])
    return kept(term("claimed", part, hostname_key, Operator.NOT_IN, nodes) for part in parts)
