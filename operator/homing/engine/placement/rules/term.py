"""The one way rules build a term: a term with no values is no term. `In []` matches no
node and the API server refuses the pod that carries it; `NotIn []` says nothing."""
from __future__ import annotations

from collections.abc import Iterable

from homing.engine.model import Operator, Term


def term(role: str, weight: int, key: str, operator: Operator, values: tuple[str, ...]) -> Term | None:
    """A weighted term, or None when `values` is empty."""
    if not values:
        return None
    return Term(role=role, weight=weight, key=key, operator=operator, values=tuple(values))


def kept(terms: Iterable[Term | None]) -> list[Term]:
    """The terms worth emitting, in order: built ones with at least one value."""
    return [t for t in terms if t is not None and t.values]
