"""Plain data the engine reads and returns. No Kubernetes client in here."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

HOSTNAME_LABEL = "kubernetes.io/hostname"


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
    UNHEALTHY = "unhealthy"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class NodeState:
    """What the engine knows of one node: its health and its topology path."""

    name: str
    health: Health
    topology: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ClusterSnapshot:
    """Nodes by name; a name that is missing is a node that is gone."""

    nodes: dict[str, NodeState] = field(default_factory=dict)

    def health(self, node: str) -> Health:
        state = self.nodes.get(node)
        return state.health if state else Health.GONE

    def topology(self, node: str) -> tuple[tuple[str, str], ...]:
        state = self.nodes.get(node)
        return state.topology if state else ()


class Operator(str, enum.Enum):
    IN = "In"
    NOT_IN = "NotIn"


class Term(BaseModel):
    """One preferred node-affinity term: `weight` on every node where `key op values`."""

    model_config = ConfigDict(frozen=True)

    role: str
    weight: int
    key: str
    operator: Operator
    values: tuple[str, ...]

    def matches(self, labels: dict[str, str]) -> bool:
        present = labels.get(self.key)
        if self.operator is Operator.IN:
            return present is not None and present in self.values
        return present is None or present not in self.values

    def as_k8s(self) -> dict:
        return {
            "weight": self.weight,
            "preference": {
                "matchExpressions": [
                    {"key": self.key, "operator": self.operator.value, "values": list(self.values)}
                ]
            },
        }
