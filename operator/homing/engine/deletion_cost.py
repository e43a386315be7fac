"""Scale-in frees the homes others wait for (docs/behaviour.md, "Deletion cost"). Terms
are fixed when a pod is created, hours before a displaced gang is placed again; which
replicas a ReplicaSet keeps at scale-in is its own choice, and one it keeps on the gang's
home costs the gang that home. The ReplicaSet deletes lower deletion costs first, so a
replica on another workload's claimed home is marked with a cost below any sibling's.

homing's mark is one fixed value: a pod carrying any other cost carries its user's, which
homing never writes over nor removes; after a restart the marks are still recognised."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
MARK = "-2147483000"  # near the int32 floor the controller parses: below any cost a user sets


@dataclass(frozen=True, slots=True)
class Replica:
    """A bound, live, in-scope pod whose controller is a ReplicaSet."""

    namespace: str
    name: str
    owner_key: str
    node: str
    cost: str | None  # its deletion-cost annotation, if any


@dataclass(frozen=True, slots=True)
class Mark:
    uid: str
    namespace: str
    name: str
    value: str | None  # MARK to set, None to remove homing's mark
    node: str
    claimant: str | None = None  # the owner waiting for the node, when set


def marks(replicas: Iterable[tuple[str, Replica]], claimants: Mapping[str, set[str]]) -> list[Mark]:
    """The changes that bring the marks in line with the claims: set on a replica whose node
    another owner claims, removed from one whose node nobody else claims any more."""
    out: list[Mark] = []
    for uid, r in replicas:
        waiting = sorted(claimants.get(r.node, set()) - {r.owner_key})
        if waiting and r.cost is None:
            out.append(Mark(uid, r.namespace, r.name, MARK, r.node, waiting[0]))
        elif not waiting and r.cost == MARK:
            out.append(Mark(uid, r.namespace, r.name, None, r.node))
    return out
