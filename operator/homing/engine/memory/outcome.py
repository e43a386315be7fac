"""behaviour.md "Admission" Outcome: where a pod that was sent home actually landed, and why not home."""
from __future__ import annotations

from dataclasses import dataclass

from homing.engine.model import ClusterSnapshot, Health


@dataclass(frozen=True, slots=True)
class Outcome:
    result: str  # home, domain, elsewhere
    reason: str  # for elsewhere: home-unhealthy, home-unavailable, home-gone, home-busy, unknown


def classify(
    home: str, node: str, snapshot: ClusterSnapshot, home_busy: bool, domains: tuple[tuple[str, str], ...] = ()
) -> Outcome:
    """`home_busy`: another accelerator pod, of any workload, sat on the home at bind time;
    `domains`: the block domains the decision preferred, (level, value) pairs."""
    if node == home:
        return Outcome("home", "home")
    if set(domains) & set(snapshot.topology(node)):
        return Outcome("domain", "domain")
    health = snapshot.health(home)
    if health is Health.GONE:
        return Outcome("elsewhere", "home-gone")
    if health is Health.UNAVAILABLE:
        return Outcome("elsewhere", "home-unavailable")
    if health is not Health.HEALTHY:
        return Outcome("elsewhere", "home-unhealthy")
    if home_busy:
        return Outcome("elsewhere", "home-busy")
    return Outcome("elsewhere", "unknown")
