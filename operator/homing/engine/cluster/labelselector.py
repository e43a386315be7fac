"""Kubernetes label selectors (metav1.LabelSelector), the one matcher of the engine.

A selector is `matchLabels` AND `matchExpressions`; the operators are In, NotIn, Exists
and DoesNotExist, as Kubernetes reads them:

- `key In values` needs the label and one of the values; `key NotIn values` holds when
  the label is absent or has none of the values; In and NotIn need at least one value,
  Exists and DoesNotExist none.
- An empty selector (no requirement) selects everything, a null one nothing. Callers to
  whom an absent or empty selector means something else say so where they call.
- A malformed selector (an unknown operator, a value that is not a string, a list where
  a mapping belongs, ...) selects nothing; nothing here raises on bad input."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NEEDS_VALUES = frozenset({IN, NOT_IN})  # Kubernetes refuses In/NotIn without values and Exists/DoesNotExist with some


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `key operator values` clause of a selector."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def holds(self, labels: Mapping[str, str]) -> bool:
        if self.operator == IN:
            return labels.get(self.key) in self.values
        if self.operator == NOT_IN:
            return labels.get(self.key) not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        return self.key not in labels  # DOES_NOT_EXIST: requirement() lets no other operator through


def _is_key(key: object) -> TypeGuard[str]:
    return isinstance(key, str) and key != ""


def _expression(expr: object) -> Requirement | None:
    """One matchExpressions entry, or None when it is malformed."""
    if not isinstance(expr, Mapping):
        return None
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values")
    values = [] if values is None else values
    if not _is_key(key) or operator not in OPERATORS or not isinstance(values, list) or not isinstance(operator, str):
        return None
    if not all(isinstance(v, str) for v in values) or bool(values) != (operator in NEEDS_VALUES):
        return None
    return Requirement(key, operator, frozenset(values))


def requirements(selector: object) -> tuple[Requirement, ...] | None:
    """The selector's requirements, matchLabels first (each `key In [value]`); None when the
    selector is null or malformed (it selects nothing), () when it is empty (everything)."""
    if not isinstance(selector, Mapping):
        return None
    match_labels = selector.get("matchLabels")
    expressions = selector.get("matchExpressions")
    match_labels = {} if match_labels is None else match_labels
    expressions = [] if expressions is None else expressions
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return None
    out = []
    for key, value in match_labels.items():
        if not _is_key(key) or not isinstance(value, str):
            return None
        out.append(Requirement(key, IN, frozenset({value})))
    for expr in expressions:
        requirement = _expression(expr)
        if requirement is None:
            return None
        out.append(requirement)
    return tuple(out)


def is_empty(selector: object) -> bool:
    """Absent, null or without a single requirement: the case callers decide for themselves."""
    return selector is None or requirements(selector) == ()


def holds(reqs: tuple[Requirement, ...] | None, labels: Mapping[str, str]) -> bool:
    """Whether labels meet every requirement; None (a malformed selector) never does."""
    return reqs is not None and all(r.holds(labels) for r in reqs)


def matches(selector: object, labels: Mapping[str, str]) -> bool:
    """Kubernetes' reading of `selector` on an object with `labels`."""
    return holds(requirements(selector), labels)
