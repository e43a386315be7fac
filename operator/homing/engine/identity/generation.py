"""Which restart of its workload a pod belongs to, where its controller writes it down:
Volcano puts the job's version on every pod it creates and raises it at each gang
restart; JobSet labels every pod with its restart attempt. A live pod of an earlier
generation than the pod being admitted was deleted by that restart, even while homing's
watch has not shown it going (behaviour.md "Claimed homes")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from homing.engine.identity.rank import is_decimal, shown

# (metadata field, key), first found wins; the values are the controllers' own counters
GENERATION_KEYS = (("annotations", "volcano.sh/job-version"), ("labels", "jobset.sigs.k8s.io/restart-attempt"))
MAX_GENERATION = 2**31 - 1  # both counters are int32


@dataclass(frozen=True, slots=True)
class Generation:
    value: int | None  # None: the pod's controller writes none, or it is unreadable
    warning: str | None = None


def pod_generation(pod: dict[str, Any]) -> Generation:
    """The pod's generation; an unreadable one is unknown (it then holds its home as any
    live pod does), with a warning naming it."""
    meta = pod.get("metadata") or {}
    for field, key in GENERATION_KEYS:
        value = (meta.get(field) or {}).get(key)
        if value is None:
            continue
        if is_decimal(value) and int(value) <= MAX_GENERATION:
            return Generation(int(value))
        return Generation(None, f"{key} {shown(value)} is not a restart count: read as unknown")
    return Generation(None)
