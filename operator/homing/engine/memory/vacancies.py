"""Vacant homes (behaviour.md "Claimed homes"): a node that is an owner's home while no
pod of that owner holds it, with when it was vacated, most recent last."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Vacancies:
    vacant: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> owner key -> vacant since
    order: dict[str, float] = field(default_factory=dict)  # node -> latest vacancy, oldest first
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> nodes

    def vacate(self, node: str, key: str, now: float) -> None:
        self.vacant.setdefault(node, {})[key] = now
        self.by_owner.setdefault(key, set()).add(node)
        self.order.pop(node, None)
        self.order[node] = now

    def reoccupy(self, node: str, key: str) -> None:
        owners = self.vacant.get(node)
        if owners is None or owners.pop(key, None) is None:
            return
        nodes = self.by_owner[key]
        nodes.discard(node)
        if not nodes:
            del self.by_owner[key]
        if not owners:
            del self.vacant[node]
            del self.order[node]
