"""The one way rules build a term: a term with no values is no term. `In []` matches no
node and the API server refuses the pod that carries it; `NotIn []` says nothing."""
from __future__ import annotations

from collections.abc import Iterable

from homing.engine.model import Expression, Operator, Term

MAX_TERM_WEIGHT = 100  # Kubernetes refuses a preferred term of a higher weight


def term(role: str, weight: int, key: str, operator: Operator, values: tuple[str, ...],
         also: tuple[Expression, ...] = ()) -> Term | None:
    """A weighted term, or None when `values` is empty (Exists takes none)."""
    if not values and operator is not Operator.EXISTS:
        return None
    return Term(role=role, weight=weight, key=key, operator=operator, values=tuple(values), also=also)


def kept(terms: Iterable[Term | None]) -> list[Term]:
    """The terms worth emitting, in order: built ones with at least one value (or Exists)."""
    return [t for t in terms if t is not None and (t.values or t.operator is Operator.EXISTS)]


def one_term_per_node_set(terms: Iterable[Term]) -> list[Term]:
    """The terms with the same node set (key, operator, values) as one term of their summed
    weight, in the order each set first came; past the cap, as few terms as carry it (all but
    the last at the cap). Kubernetes adds the weights of every term a node matches, so no
    node's score changes; the pod carries one term per set, not one per rule that named it
    (a cordoned home is a vacant home, a fault and a claimed home at once)."""
    merged: dict[tuple[Expression, ...], tuple[list[str], int]] = {}
    for t in terms:
        roles, weight = merged.get(t.expressions, ([], 0))
        merged[t.expressions] = ([*roles, t.role] if t.role not in roles else roles, weight + t.weight)
    out = []
    for ((key, operator, values), *also), (roles, weight) in merged.items():
        full, rest = divmod(weight, MAX_TERM_WEIGHT)
        for part in [MAX_TERM_WEIGHT] * full + ([rest] if rest else []):
            out.append(Term(role="+".join(roles), weight=part, key=key, operator=operator, values=values, also=tuple(also)))
    return out
