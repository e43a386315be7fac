"""Which job kind a pod is (behaviour.md "Topology"), most specific first, and its topology levels.
Bad input never fails: a warning and the node strategy."""
from __future__ import annotations

from typing import Protocol

from homing.engine.placement.job_kinds import hypernode, multilevel, rack_superpod, superpod
from homing.engine.placement.job_kinds.common import SCHEDULE_POLICY, BadTopology
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.levels import NODE, JobTopology, fallback


class JobKind(Protocol):
    """What each job kind's module holds."""

    KIND: str

    def recognise(self, facts: JobFacts) -> bool: ...

    def topology(self, facts: JobFacts, max_tier: int) -> JobTopology: ...


KINDS: tuple[JobKind, ...] = (hypernode, multilevel, rack_superpod, superpod)


def job_topology(facts: JobFacts, max_tier: int) -> JobTopology:
    _, conflict = facts.value(SCHEDULE_POLICY)
    if conflict:
        return fallback(conflict)
    for kind in KINDS:
        try:
            if kind.recognise(facts):
                return kind.topology(facts, max_tier)
        except BadTopology as bad:
            return fallback(f"{kind.KIND} job: {bad}")
    return NODE
