"""Vacant homes (behaviour.md "Claimed homes"): a node that is an owner's home while no
pod of that owner holds it, with when it was vacated, most recent last; the whole
cluster's, and each namespace's apart (behaviour.md "Tenants": a pod is steered by its own
namespace's vacant homes unless tenants share nodes, and an admission must not filter
every vacancy of the cluster to find them)."""
from __future__ import annotations

from dataclasses import dataclass, field

from homing.engine.model import key_namespace


@dataclass(slots=True)
class VacantHomes:
    """Vacant homes of some owners. A namespace's part is read only: change it through the
    whole (Vacancies), which keeps both."""

    vacant: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> owner key -> vacant since
    order: dict[str, float] = field(default_factory=dict)  # node -> latest vacancy, oldest first
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> nodes

    def _vacate(self, node: str, key: str, now: float) -> None:
        self.vacant.setdefault(node, {})[key] = now
        self.by_owner.setdefault(key, set()).add(node)
        self.order.pop(node, None)
        self.order[node] = now

    def _reoccupy(self, node: str, key: str) -> bool:
        owners = self.vacant.get(node)
        if owners is None or owners.pop(key, None) is None:
            return False
        nodes = self.by_owner[key]
        nodes.discard(node)
        if not nodes:
            del self.by_owner[key]
        if not owners:
            del self.vacant[node]
            del self.order[node]
        return True


@dataclass(slots=True)
class Vacancies(VacantHomes):
    namespaces: dict[str, VacantHomes] = field(default_factory=dict)  # each namespace's owners' part

    def vacate(self, node: str, key: str, now: float) -> None:
        self._vacate(node, key, now)
        self.namespaces.setdefault(key_namespace(key), VacantHomes())._vacate(node, key, now)

    def reoccupy(self, node: str, key: str) -> None:
        if not self._reoccupy(node, key):
            return
        namespace = key_namespace(key)
        part = self.namespaces[namespace]
        part._reoccupy(node, key)
        if not part.by_owner:
            del self.namespaces[namespace]

    def of(self, namespace: str) -> VacantHomes:
        """The vacant homes of `namespace`'s owners (read only)."""
        return self.namespaces.get(namespace) or VacantHomes()
