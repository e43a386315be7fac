"""Keep clear: a small push away from nodes that are other ranks' homes, so a rank
with no home of its own does not take a sibling's node and send the sibling away.
Weight `keep_clear` only breaks ties inside a class; it must stay below the outermost
domain weight or a sibling's home in the domain falls under a stranger."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def keep_clear_term(sibling_homes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("keep-clear", weight, hostname_key, Operator.NOT_IN, sibling_homes)
