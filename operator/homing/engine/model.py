"""Plain data the engine reads and returns. No Kubernetes client in here."""
from __future__ import annotations

import enum
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from homing.engine.cluster.labelselector import Requirement  # the engine's one label matcher

HOSTNAME_LABEL = "kubernetes.io/hostname"
_Key = TypeVar("_Key")  # the key of an index discard_from keeps


class OwnerRef(BaseModel):
    """The workload that outlives its pods; `uid` is the memory key."""

    model_config = ConfigDict(frozen=True)

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str

    @property
    def display(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def key(self) -> str:
        """The memory key: namespace and UID, so that a pod can only reach owners of
        its own namespace, whatever UID a forged ownerReference names (behaviour.md "Identity")."""
        return f"{self.namespace}/{self.uid}"


def key_namespace(key: str) -> str:
    """The namespace of an owner key (OwnerRef.key, or a bare pod's "<namespace>/pod:<uid>")."""
    return key.split("/", 1)[0]


class Rank(BaseModel):
    """Which member of the workload a pod is. `key` is the memory key, `index` the
    number block arithmetic uses (the index part of `<spec>/<index>`)."""

    model_config = ConfigDict(frozen=True)

    key: str
    index: int
    source: str


class Health(str, enum.Enum):
    HEALTHY = "healthy"
    SUB_HEALTHY = "sub-healthy"
    UNAVAILABLE = "unavailable"  # cordoned or drained: maintenance, not a fault (behaviour.md "Health")
    UNHEALTHY = "unhealthy"
    GONE = "gone"


Path = tuple[tuple[str, str], ...]  # (level name, domain value), innermost first


@dataclass(frozen=True, slots=True)
class NodeState:
    """What the engine knows of one node: health, topology path, and for each
    label-based level the label key its domain value came from."""

    name: str
    health: Health
    topology: Path = ()
    keys: tuple[tuple[str, str], ...] = ()  # (level name, label key)
    npus: int | None = None  # allocatable accelerators, when the node reports them
    images: frozenset[str] = frozenset()  # normalised names of the images it holds (engine/cluster/images.py)
    image_labels: frozenset[str] = frozenset()  # the image label keys it carries (engine/cluster/images.py)


@dataclass(frozen=True, slots=True)
class DomainExpr:
    """How a term selects a domain: `key In values`."""

    key: str
    values: tuple[str, ...]


def discard_from(index: dict[_Key, set[str]], key: _Key, name: str) -> None:
    """Take `name` out of `index[key]`, and the key with its last name."""
    names = index.get(key)
    if names is not None:
        names.discard(name)
        if not names:
            del index[key]


CHANGES_KEPT = 8192  # node changes a view can catch up on; further behind, it starts over


class ClusterSnapshot:
    """Nodes by name (a missing name is a node that is gone), with each domain's
    members and the unhealthy nodes kept up to date as nodes are put and removed."""

    def __init__(self, nodes: dict[str, NodeState] | None = None) -> None:
        self.nodes: dict[str, NodeState] = {}
        self.members: dict[tuple[str, str], set[str]] = {}
        self.unhealthy: set[str] = set()
        self.selectors: dict[tuple[str, str], DomainExpr] = {}  # domains not named by a label
        self.image_nodes: dict[str, set[str]] = {}  # image -> nodes whose kubelet reports it
        self.labelled: dict[str, set[str]] = {}  # image label key -> nodes that carry it
        self.max_tier = 0  # HyperNode tiers known (levels tier1..tierN)
        self.generation = 0  # counts this snapshot's changes: what views compare
        self.token = uuid.uuid4().int  # which snapshot a view was made from (views of another start over)
        self.changes: deque[tuple[int, str]] = deque(maxlen=CHANGES_KEPT)  # (generation, node), oldest first
        for state in (nodes or {}).values():
            self.put(state)

    def put(self, state: NodeState) -> NodeState | None:
        if self.nodes.get(state.name) == state:
            return state  # a node event that changed nothing homing reads (a status heartbeat)
        old = self.remove(state.name)
        self._changed(state.name)
        self.nodes[state.name] = state
        for domain in state.topology:
            self.members.setdefault(domain, set()).add(state.name)
        if state.health is Health.UNHEALTHY:
            self.unhealthy.add(state.name)
        for image in state.images:
            self.image_nodes.setdefault(image, set()).add(state.name)
        for key in state.image_labels:
            self.labelled.setdefault(key, set()).add(state.name)
        return old

    def remove(self, name: str) -> NodeState | None:
        old = self.nodes.pop(name, None)
        if old is not None:
            self._changed(name)
            for domain in old.topology:
                discard_from(self.members, domain, name)
            self.unhealthy.discard(name)
            for image in old.images:
                discard_from(self.image_nodes, image, name)
            for key in old.image_labels:
                discard_from(self.labelled, key, name)
        return old

    def _changed(self, name: str) -> None:
        self.generation += 1
        self.changes.append((self.generation, name))

    def catch_up(self, seen: tuple[int, int]) -> tuple[set[str] | None, tuple[int, int]]:
        """For a view up to date with `seen` (token, generation): the nodes put or removed
        since (None: look at all of them, when that is not known: another snapshot, or
        further back than the changes kept), and what the view is up to date with afterwards."""
        now = (self.token, self.generation)
        token, generation = seen
        if token != self.token:
            return None, now
        if len(self.changes) == self.changes.maxlen and generation < self.changes[0][0]:
            return None, now
        names: set[str] = set()
        for gen, name in reversed(self.changes):
            if gen <= generation:
                break
            names.add(name)
        return names, now

    def health(self, node: str) -> Health:
        state = self.nodes.get(node)
        return state.health if state else Health.GONE

    def topology(self, node: str) -> Path:
        state = self.nodes.get(node)
        return state.topology if state else ()

    def domain_expr(self, level: str, value: str, hostname_key: str) -> DomainExpr | None:
        """A label selector when the domain's nodes name it by a label, else their
        hostnames; None when no node of the domain is left."""
        selector = self.selectors.get((level, value))
        if selector is not None:
            return selector
        names = self.members.get((level, value))
        if not names:
            return None
        some = self.nodes[next(iter(names))]
        for lvl, key in some.keys:
            if lvl == level:
                return DomainExpr(key, (value,))
        return DomainExpr(hostname_key, tuple(sorted(names)))


class Operator(str, enum.Enum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"


Expression = tuple[str, Operator, tuple[str, ...]]  # (label key, operator, values): one matchExpressions entry


class Term(BaseModel):
    """One preferred node-affinity term: `weight` on every node where `key op values` and
    every expression of `also` hold (Kubernetes ANDs a term's matchExpressions)."""

    model_config = ConfigDict(frozen=True)

    role: str
    weight: int
    key: str
    operator: Operator
    values: tuple[str, ...]
    also: tuple[Expression, ...] = ()

    @property
    def expressions(self) -> tuple[Expression, ...]:
        return ((self.key, self.operator, self.values), *self.also)

    def matches(self, labels: dict[str, str]) -> bool:
        return all(Requirement(key, op.value, frozenset(values)).holds(labels) for key, op, values in self.expressions)

    def as_k8s(self) -> dict[str, Any]:
        return {
            "weight": self.weight,
            "preference": {
                "matchExpressions": [
                    {"key": key, "operator": op.value} if op is Operator.EXISTS
                    else {"key": key, "operator": op.value, "values": list(values)}
                    for key, op, values in self.expressions
                ]
            },
        }
