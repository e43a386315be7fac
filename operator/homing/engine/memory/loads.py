"""What an accelerator pod holds on its node, and one owner's burst of admissions: facts the
memory keeps per pod and per owner, which the placement rules read (displace few, free room)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homing.engine.identity.accelerators import AcceleratorRequest, accelerator_request

BURST_SECONDS = 10.0  # admissions of one band this close together are one burst

Band = tuple[str, int]  # (namespace, priority): the workloads whose admissions form one burst


@dataclass(frozen=True, slots=True)
class Load:
    """What one accelerator pod holds on its node."""

    owner_key: str
    priority: int
    npus: int


def band(load: Load) -> Band:
    """The burst a pod counts in: every pod of its namespace at its priority, not its owner
    alone. Two services scaling out together at one priority each chose a victim of their own
    and restarted two gangs for a few replicas (issue 44's crowded day); as one burst they
    displace one."""
    return (load.owner_key.split("/", 1)[0], load.priority)


@dataclass(slots=True)
class Burst:
    """One band's admissions in quick succession and the victim they agreed on."""

    last: float
    count: int = 0
    band: Band = ("", 0)
    victim: str | None = None
    used: set[str] = field(default_factory=set)  # victims whose nodes the burst has used up
    sent: int = 0  # pods of this burst sent to the current victim


def pod_load(pod: dict[str, Any], owner_key: str, prefixes: tuple[str, ...], request: AcceleratorRequest | None = None) -> Load:
    """A pod's priority (set by the Priority admission plugin before webhooks) and the
    accelerators it requests; unreadable amounts count as none."""
    priority = (pod.get("spec") or {}).get("priority")
    npus = (request or accelerator_request(pod, prefixes)).count
    return Load(owner_key, priority if isinstance(priority, int) and not isinstance(priority, bool) else 0, npus)
