"""Volcano HyperNode jobs: the PodGroup has `networkTopology` or `subGroupPolicy`.
Levels are the HyperNode tiers up to `highestTierAllowed`; up to the sub-group's own
highest tier a block is the pod's sub-group (same values of `matchLabelKeys`), above
it the whole job."""
from __future__ import annotations

from typing import Any

from homing.engine.cluster import labelselector
from homing.engine.placement.job_kinds.common import BadTopology
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.levels import JobTopology, Level

KIND = "hypernode"


def recognise(facts: JobFacts) -> bool:
    return bool(facts.group_spec.get("networkTopology") or facts.group_spec.get("subGroupPolicy"))


def _highest(network: object, default: int) -> int:
    if not isinstance(network, dict) or network.get("highestTierAllowed") is None:
        return default
    tier = network["highestTierAllowed"]
    if not isinstance(tier, int) or tier < 1:
        raise BadTopology(f"networkTopology.highestTierAllowed={tier!r} is not a positive integer")
    return min(tier, default)


def _selected(selector: object, labels: dict[str, Any]) -> bool:
    """Whether the sub-group policy's labelSelector covers a pod with these labels."""
    if labelselector.is_empty(selector):
        return True  # a policy without a selector (or an empty one) is meant for every pod of the group
    return labelselector.matches(selector, labels)


def subgroup(facts: JobFacts, job_tier: int) -> tuple[str | None, int]:
    """The pod's sub-group id and the highest tier it should share (the job's, unless
    the sub-group policy sets its own)."""
    for policy in facts.group_spec.get("subGroupPolicy") or ():
        if not isinstance(policy, dict) or not _selected(policy.get("labelSelector"), facts.pod_labels):
            continue
        keys = policy.get("matchLabelKeys") or []
        missing = [k for k in keys if k not in facts.pod_labels]
        if missing:
            raise BadTopology(f"sub-group {policy.get('name')!r}: the pod has no label {missing[0]!r}")
        values = ",".join(f"{k}={facts.pod_labels[k]}" for k in keys)
        return f"{policy.get('name', '')}:{values}", _highest(policy.get("networkTopology"), job_tier)
    return None, 0


def topology(facts: JobFacts, max_tier: int) -> JobTopology:
    if max_tier < 1:
        raise BadTopology("the job asks for HyperNode topology but the cluster has no HyperNodes")
    job_tier = _highest(facts.group_spec.get("networkTopology"), max_tier)
    group, group_tier = subgroup(facts, job_tier)
    top = job_tier
    levels = tuple(Level(f"tier{t}", None, by_group=group is not None and t <= group_tier) for t in range(1, top + 1))
    return JobTopology(kind=KIND, levels=levels, group=group)
