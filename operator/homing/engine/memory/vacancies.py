"""Vacant homes (behaviour.md "Claimed homes"): a node that is an owner's home while no
pod of that owner holds it, with when it was vacated, most recent last; the whole
cluster's, and each namespace's apart (behaviour.md "Tenants": a pod is steered by its own
namespace's vacant homes unless tenants share nodes, and an admission must not filter
every vacancy of the cluster to find them)."""
from __future__ import annotations

from collections.abc import Mapping
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

    def vacate_all(self, homes: Mapping[str, Mapping[str, float]], now: float) -> int:
        """Many homes vacant since `now` at once (start-up's rebuild, memory/lifecycle.py):
        `homes` is owner key -> node -> when a pod was last known there. The result is what
        `vacate` called home by home in that order would leave, each node placed by its latest
        such time (in each namespace's part by that namespace's owners' alone), at a fraction
        of the cost: a million homes were 7 s one by one. Returns how many were vacated."""
        parts: dict[str, tuple[VacantHomes, dict[str, float]]] = {}
        whole_at: dict[str, float] = {}
        count = 0
        for key, nodes in homes.items():
            if not nodes:
                continue
            namespace = key_namespace(key)
            if namespace not in parts:
                parts[namespace] = (self.namespaces.setdefault(namespace, VacantHomes()), {})
            part, part_at = parts[namespace]
            for target, latest in ((self, whole_at), (part, part_at)):
                target.by_owner.setdefault(key, set()).update(nodes)
                for node, at in nodes.items():
                    target.vacant.setdefault(node, {})[key] = now
                    if node not in latest or at > latest[node]:
                        latest[node] = at
            count += len(nodes)
        for target, latest in ((self, whole_at), *parts.values()):
            for node in sorted(latest, key=lambda n: (latest[n], n)):
                target.order.pop(node, None)
                target.order[node] = now
        return count

    def of(self, namespace: str) -> VacantHomes:
        """The vacant homes of `namespace`'s owners (read only)."""
        return self.namespaces.get(namespace) or VacantHomes()
