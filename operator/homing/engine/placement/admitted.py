"""What an admission leaves in the memory (behaviour.md "Admission"), as the lifecycle step
does for a pod event: `admitted` turns the decision into plain data, `apply` writes it into
the index. The webhook's adapter calls both and touches none of the index's parts itself."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from homing.config import Settings
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import Burst, Load, pod_load
from homing.engine.placement.decide import Decision


@dataclass(frozen=True, slots=True)
class Admitted:
    owner_key: str
    load: Load  # the room the pod will take: ahead of the next admissions until the watch shows it
    at: float
    promise: str | None = None  # the free home promised to this rankless pod
    promise_seconds: float = 0.0  # how long an unseen pod keeps it
    burst: Burst | None = None  # the burst counted with this pod, and the victim it agreed on


def admitted(decision: Decision, pod: dict[str, Any], settings: Settings, now: float) -> Admitted | None:
    """None when the admission leaves nothing behind: the pod was skipped or has no owner."""
    if decision.outcome == "skipped" or not decision.owner_key:
        return None
    return Admitted(
        owner_key=decision.owner_key,
        load=pod_load(pod, decision.owner_key, tuple(settings.scope.resource_prefixes)),
        at=now,
        promise=decision.promise,
        promise_seconds=settings.lifetimes.promise_seconds,
        burst=decision.burst,
    )


def apply(index: MemoryIndex, a: Admitted) -> None:
    mem = index.owner(a.owner_key)
    if mem is not None:
        mem.stats.admitted += 1
        index.dirty.add(a.owner_key)  # the admitted count reaches the stored memory
    if a.promise:
        index.promised.make(a.owner_key, a.promise, a.at, a.promise_seconds)
    if a.burst is not None:
        index.keep_burst(a.burst)  # the next pod of the burst agrees
    index.waiting.admitted(a.load, a.at)
