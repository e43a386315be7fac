"""Shared parsing for the topology job kinds (behaviour.md "Topology"): policies, block sizes,
NPUs per node. Each kind module says which keys it reads and what levels it has."""
from __future__ import annotations

from types import MappingProxyType

from homing.engine.identity.accelerators import MAX_COUNT_DIGITS, parse_count
from homing.engine.identity.rank import shown
from homing.engine.placement.job_kinds.facts import JobFacts

SCHEDULE_POLICY = "huawei.com/schedule_policy"
SP_BLOCK = "sp-block"
DEFAULT_NPUS_PER_NODE = 8
# NPUs per node implied by the scheduling policy or the A3 accelerator type.
POLICY_NPUS = MappingProxyType({"chip8-node8-sp": 8, "chip2-node16-sp": 16, "chip2-node8-sp": 8, "chip8-node8-ra64-sp": 8})
ACCELERATOR_TYPE = "accelerator-type"
ACCELERATOR_NPUS = MappingProxyType({"module-a3-16-super-pod": 16, "module-a3-8-super-pod": 8})


class BadTopology(ValueError):
    """Bad input: the message becomes the warning, the node strategy the fallback."""


def read(facts: JobFacts, key: str) -> str | None:
    value, conflict = facts.value(key)
    if conflict:
        raise BadTopology(conflict)
    return value


def positive_int(value: str, what: str) -> int:
    """A block or group size: spaces around it are tolerated, anything else not a count is bad input."""
    number = parse_count(value.strip())
    if not number:  # None (not a count) or 0
        raise BadTopology(f"{what}={shown(value)} is not a positive integer of at most {MAX_COUNT_DIGITS} digits")
    return number


def npus_per_node(facts: JobFacts) -> int:
    policy = read(facts, SCHEDULE_POLICY)
    if policy is not None and policy in POLICY_NPUS:
        return POLICY_NPUS[policy]
    accelerator = facts.node_selector.get(ACCELERATOR_TYPE)
    if accelerator is not None and accelerator in ACCELERATOR_NPUS:
        return ACCELERATOR_NPUS[accelerator]
    return facts.home_npus or DEFAULT_NPUS_PER_NODE


def nodes_per_block(npus: int, per_node: int, what: str) -> int:
    if npus % per_node:
        raise BadTopology(f"{what}={npus} is not a multiple of the node's {per_node} NPUs")
    return npus // per_node


def check_divides_job(facts: JobFacts, block_npus: int, what: str) -> None:
    """The job's NPUs (PodGroup minMember x NPUs per pod) must fill whole blocks."""
    if facts.min_member and facts.npus_unreadable:
        raise BadTopology(f"cannot check that {what} divides the job: {facts.npus_unreadable}")
    if facts.min_member and facts.npus_per_pod:
        job = facts.min_member * facts.npus_per_pod
        if job % block_npus:
            raise BadTopology(f"{what}={block_npus} does not divide the job's {job} NPUs")
