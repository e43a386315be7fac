"""Multilevel jobs: `huawei.com/affinity-config: "level1=G1,level2=G2,..."`, Gk pods
per level-k group, innermost first. Level labels come from the resource-level-config."""
from __future__ import annotations

from homing.engine.identity.rank import shown
from homing.engine.placement.job_kinds.common import SCHEDULE_POLICY, BadTopology, positive_int, read
from homing.engine.placement.job_kinds.facts import JobFacts
from homing.engine.placement.job_kinds.levels import JobTopology, Level

KIND = "multilevel"
POLICY = "multilevel"
AFFINITY_CONFIG = "huawei.com/affinity-config"


def recognise(facts: JobFacts) -> bool:
    return POLICY in (facts.pod.get(SCHEDULE_POLICY), facts.group.get(SCHEDULE_POLICY))


def parse_affinity_config(text: str) -> list[tuple[str, int]]:
    """"level1=8,level2=32" -> [("level1", 8), ("level2", 32)]; each group a multiple of the one inside it."""
    levels: list[tuple[str, int]] = []
    for i, part in enumerate(p.strip() for p in text.split(",") if p.strip()):
        name, sep, size = part.partition("=")
        if not sep or name.strip() != f"level{i + 1}":
            raise BadTopology(f"{AFFINITY_CONFIG}={shown(text)}: expected level{i + 1}=<pods>, got {shown(part)}")
        levels.append((name.strip(), positive_int(size, f"{AFFINITY_CONFIG} {name.strip()}")))
    if not levels:
        raise BadTopology(f"{AFFINITY_CONFIG}={shown(text)} names no level")
    for (inner, g_in), (outer, g_out) in zip(levels, levels[1:]):
        if g_out % g_in:
            raise BadTopology(f"{AFFINITY_CONFIG}: {outer}={g_out} is not a multiple of {inner}={g_in}")
    return levels


def topology(facts: JobFacts, max_tier: int) -> JobTopology:
    text = read(facts, AFFINITY_CONFIG)
    if text is None:
        raise BadTopology(f"{SCHEDULE_POLICY}=multilevel needs {AFFINITY_CONFIG}")
    return JobTopology(kind=KIND, levels=tuple(Level(name, size) for name, size in parse_affinity_config(text)))
