"""Rack-windowed super-pod jobs (`chip8-node8-ra64-sp`): blocks of `ra-block` NPUs
share a rack, blocks of `sp-block` NPUs a super-pod. `tp-block` is ra-block's old name."""
from __future__ import annotations

from homing.engine.placement.job_kinds.common import SCHEDULE_POLICY, SP_BLOCK, BadTopology, npus_per_node, positive_int, read
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.levels import JobTopology, Level
from homing.engine.placement.job_kinds.superpod import superpod_level

KIND = "rack-super-pod"
POLICY = "chip8-node8-ra64-sp"
RA_BLOCK, TP_BLOCK = "ra-block", "tp-block"


def recognise(facts: JobFacts) -> bool:
    return POLICY in (facts.pod.get(SCHEDULE_POLICY), facts.group.get(SCHEDULE_POLICY))


def topology(facts: JobFacts, max_tier: int) -> JobTopology:
    raw = read(facts, RA_BLOCK) or read(facts, TP_BLOCK)
    if raw is None:
        raise BadTopology(f"{POLICY} needs {RA_BLOCK} (or {TP_BLOCK})")
    ra_block = positive_int(raw, RA_BLOCK)
    if ra_block & (ra_block - 1):
        raise BadTopology(f"{RA_BLOCK}={ra_block} is not a power of two")
    sp_raw = read(facts, SP_BLOCK)
    if sp_raw is not None and ra_block > positive_int(sp_raw, SP_BLOCK):
        raise BadTopology(f"{RA_BLOCK}={ra_block} is larger than {SP_BLOCK}={sp_raw}")
    per_node = npus_per_node(facts)
    rack = Level("rack", -(-ra_block // per_node))  # rounded up: a partial node still needs a rack
    return JobTopology(kind=KIND, levels=(rack, superpod_level(facts)))
