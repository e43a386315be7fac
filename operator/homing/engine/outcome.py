"""SPEC 3 Outcome: where a pod that was sent home actually landed, and why not home."""
from __future__ import annotations

from dataclasses import dataclass

from homing.engine.model import ClusterSnapshot, Health


@dataclass(frozen=True, slots=True)
class Outcome:
    result: str  # home, domain, elsewhere
    reason: str  # for elsewhere: home-unhealthy, home-gone, home-busy, unknown


def classify(
    home: str, node: str, snapshot: ClusterSnapshot, busy_nodes: set[str], domains: tuple[tuple[str, str], ...] = ()
) -> Outcome:
    """`busy_nodes`: nodes holding another live pod of the same owner at bind time;
    `domains`: the block domains the decision preferred, (level, value) pairs."""
    if node == home:
        return Outcome("home", "home")
    if set(domains) & set(snapshot.topology(node)):
        return Outcome("domain", "domain")
    health = snapshot.health(home)
    if health is Health.GONE:
        return Outcome("elsewhere", "home-gone")
    if health is not Health.HEALTHY:
        return Outcome("elsewhere", "home-unhealthy")
    if home in busy_nodes:
        return Outcome("elsewhere", "home-busy")
    return Outcome("elsewhere", "unknown")
