"""Ascend super-pod jobs: blocks of `sp-block` NPUs share a super-pod.
Recognised by `sp-block`, a super-pod scheduling policy, or an A3 accelerator type."""
from __future__ import annotations

from homing.engine.placement.job_kinds.common import (
    ACCELERATOR_NPUS,
    ACCELERATOR_TYPE,
    POLICY_NPUS,
    SCHEDULE_POLICY,
    SP_BLOCK,
    check_divides_job,
    nodes_per_block,
    npus_per_node,
    positive_int,
    read,
)
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.levels import JobTopology, Level

KIND = "super-pod"
SUPERPOD_POLICIES = frozenset({"chip8-node8-sp", "chip2-node16-sp", "chip2-node8-sp"})
assert SUPERPOD_POLICIES <= set(POLICY_NPUS)


def recognise(facts: JobFacts) -> bool:
    return (
        SP_BLOCK in facts.pod
        or SP_BLOCK in facts.group
        or facts.pod.get(SCHEDULE_POLICY) in SUPERPOD_POLICIES
        or facts.group.get(SCHEDULE_POLICY) in SUPERPOD_POLICIES
        or facts.node_selector.get(ACCELERATOR_TYPE) in ACCELERATOR_NPUS
    )


def superpod_level(facts: JobFacts) -> Level:
    """Without sp-block the whole job is one block: it should share one super-pod."""
    raw = read(facts, SP_BLOCK)
    if raw is None:
        return Level("superPod")
    sp_block = positive_int(raw, SP_BLOCK)
    check_divides_job(facts, sp_block, SP_BLOCK)
    return Level("superPod", nodes_per_block(sp_block, npus_per_node(facts), SP_BLOCK))


def topology(facts: JobFacts, max_tier: int) -> JobTopology:
    return JobTopology(kind=KIND, levels=(superpod_level(facts),))
