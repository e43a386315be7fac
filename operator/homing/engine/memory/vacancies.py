"""Vacant homes (behaviour.md "Claimed homes"): a node that is an owner's home while no
pod of that owner holds it, with when it was vacated, most recent last; the whole
cluster's, and each namespace's apart (behaviour.md "Tenants": a pod is steered by its own
namespace's vacant homes unless tenants share nodes, and an admission must not filter
every vacancy of the cluster to find them).

Each vacancy is stored once, in its namespace's part; the whole cluster's view reads the
parts. A restarted process finds every home no live pod holds vacant (980,000 of a million
ranks at 5,000 nodes), and a second copy for the whole cluster cost 90 MiB there
(bench/engine.py, vacant_bytes_per_home)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from homing.engine.model import key_namespace


@dataclass(slots=True)
class VacantHomes:
    """One namespace's owners' vacant homes. Read only from outside: change them through
    the whole (Vacancies), which keeps its view in step. It reads as the whole does
    (`vacant`, `order`, `by_owner`, `owners_at`, `since`): a tenant's view of the index
    (memory/tenancy.py) holds its namespace's part in the whole's place."""

    vacant: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> owner key -> vacant since
    order: dict[str, float] = field(default_factory=dict)  # node -> latest vacancy, oldest first
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> nodes

    def owners_at(self, node: str) -> Iterator[str]:
        return iter(self.vacant.get(node, ()))

    def since(self, node: str, key: str) -> float:
        return self.vacant[node][key]

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


class _AllVacant(Mapping[str, Mapping[str, float]]):
    """node -> owner key -> vacant since, over every namespace: the one namespace's own
    mapping where a node is vacant for one namespace only (the usual case), a merged copy
    where it is vacant for several."""

    __slots__ = ("_parts", "_spots")

    def __init__(self, parts: dict[str, VacantHomes], spots: dict[str, set[str]]) -> None:
        self._parts = parts
        self._spots = spots

    def __getitem__(self, node: str) -> Mapping[str, float]:
        namespaces = self._spots[node]
        if len(namespaces) == 1:
            return self._parts[next(iter(namespaces))].vacant[node]
        merged: dict[str, float] = {}
        for namespace in sorted(namespaces):
            merged.update(self._parts[namespace].vacant[node])
        return merged

    def __iter__(self) -> Iterator[str]:
        return iter(self._spots)

    def __len__(self) -> int:
        return len(self._spots)

    def __contains__(self, node: object) -> bool:
        return node in self._spots


@dataclass(slots=True)
class Vacancies:
    """The whole cluster's vacant homes: each namespace's part, and what reads them all at
    once. `by_owner` holds the parts' own sets (an owner is in one namespace); `order` is
    the whole's own, one entry a node. `order` and `spots` could be read off the parts, at a
    merge of every part's order per admission: one entry a node is what keeps them cheap."""

    namespaces: dict[str, VacantHomes] = field(default_factory=dict)  # each namespace's owners' part
    order: dict[str, float] = field(default_factory=dict)  # node -> latest vacancy, oldest first
    by_owner: dict[str, set[str]] = field(default_factory=dict)  # owner key -> nodes (the part's set)
    spots: dict[str, set[str]] = field(default_factory=dict)  # node -> namespaces with a vacancy there

    @property
    def vacant(self) -> Mapping[str, Mapping[str, float]]:
        """node -> owner key -> vacant since, every namespace's."""
        return _AllVacant(self.namespaces, self.spots)

    def vacate(self, node: str, key: str, now: float) -> None:
        namespace = key_namespace(key)
        part = self.namespaces.setdefault(namespace, VacantHomes())
        part._vacate(node, key, now)
        self.by_owner[key] = part.by_owner[key]
        self.spots.setdefault(node, set()).add(namespace)
        self.order.pop(node, None)
        self.order[node] = now

    def reoccupy(self, node: str, key: str) -> None:
        namespace = key_namespace(key)
        part = self.namespaces.get(namespace)
        if part is None or not part._reoccupy(node, key):
            return
        if key not in part.by_owner:
            del self.by_owner[key]
        if node not in part.vacant:
            spot = self.spots[node]
            spot.discard(namespace)
            if not spot:
                del self.spots[node]
                del self.order[node]
        if not part.by_owner:
            del self.namespaces[namespace]

    def vacate_all(self, homes: Mapping[str, Mapping[str, float]], now: float) -> int:
        """Many homes vacant since `now` at once (start-up's rebuild, memory/lifecycle.py):
        `homes` is owner key -> node -> when a pod was last known there. The result is what
        `vacate` called home by home in that order would leave, each node placed by its latest
        such time (in each namespace's part by that namespace's owners' alone), at a fraction
        of the cost: a million homes were 7 s one by one. Returns how many were vacated."""
        parts: dict[str, tuple[VacantHomes, dict[str, float]]] = {}
        count = 0
        for key, nodes in homes.items():
            if not nodes:
                continue
            namespace = key_namespace(key)
            if namespace not in parts:
                parts[namespace] = (self.namespaces.setdefault(namespace, VacantHomes()), {})
            part, part_at = parts[namespace]
            owned = self.by_owner[key] = part.by_owner.setdefault(key, set())
            owned.update(nodes)
            for node, at in nodes.items():
                part.vacant.setdefault(node, {})[key] = now
                if node not in part_at or at > part_at[node]:
                    part_at[node] = at
            count += len(nodes)
        whole_at: dict[str, float] = {}
        for namespace, (_, part_at) in parts.items():
            for node, at in part_at.items():
                self.spots.setdefault(node, set()).add(namespace)
                if node not in whole_at or at > whole_at[node]:
                    whole_at[node] = at
        for order, latest in ((self.order, whole_at), *((p.order, at) for p, at in parts.values())):
            for node in sorted(latest, key=lambda n: (latest[n], n)):
                order.pop(node, None)
                order[node] = now
        return count

    def owners_at(self, node: str) -> Iterator[str]:
        """The owners vacant on `node`, part by part: `vacant[node]` merges the parts into a new
        mapping where several namespaces are vacant there, on every call."""
        for namespace in self.spots.get(node, ()):
            yield from self.namespaces[namespace].vacant[node]

    def since(self, node: str, key: str) -> float:
        """When `key` vacated `node` (a vacancy that exists): read in its namespace's part
        alone, where `vacant[node]` merges every namespace vacant there."""
        return self.namespaces[key_namespace(key)].vacant[node][key]

    def of(self, namespace: str) -> VacantHomes:
        """The vacant homes of `namespace`'s owners (read only)."""
        return self.namespaces.get(namespace) or VacantHomes()
