"""Displace few workloads (behaviour.md "Beyond the home"): when the pod fits on no free node, prefer the
nodes of the one lower-priority workload its burst agreed on. Weight `displace` acts as one
more level above image-warm and keep-clear together (and Kubernetes' rounding step); it is
given only to pods without domain terms, whose network locality comes first."""
from __future__ import annotations

from homing.engine.model import Operator, Term
from homing.engine.placement.rules.term import term


def displace_term(nodes: tuple[str, ...], weight: int, hostname_key: str) -> Term | None:
    return term("displace", weight, hostname_key, Operator.IN, nodes)
