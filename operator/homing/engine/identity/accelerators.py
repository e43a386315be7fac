"""The one reading of what accelerators a pod asks for: which accelerator resource names
it mentions (scope), and how many it requests (room, victims, job block sizes). The API
server has defaulted requests from limits before any webhook sees the pod."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from homing.engine.identity.rank import is_decimal, shown

# No NPU count, block or group size comes near a billion; longer text is a typo or an attack.
MAX_COUNT_DIGITS = 9


def parse_count(text: str) -> int | None:
    """A count written in ASCII digits (at most MAX_COUNT_DIGITS), else None: checked first,
    so neither "²" (isdigit() but not int()) nor 4,301 digits (past Python's int-string
    limit) ever reaches int()."""
    if not is_decimal(text) or len(text) > MAX_COUNT_DIGITS:
        return None
    return int(text)


@dataclass(frozen=True, slots=True)
class AcceleratorRequest:
    names: tuple[str, ...]  # accelerator resource names in any container's requests or limits, sorted
    count: int  # accelerators the pod's containers request (unreadable amounts count as none)
    unreadable: str | None = None  # the first request that is not a whole count, said for a warning


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def accelerator_request(pod: dict[str, Any], prefixes: Iterable[str]) -> AcceleratorRequest:
    prefixes = tuple(prefixes)
    spec = _mapping(pod.get("spec"))
    names: set[str] = set()
    count, unreadable = 0, None
    for init in (False, True):
        for container in spec.get("initContainers" if init else "containers") or ():
            resources = _mapping(_mapping(container).get("resources"))
            for kind in ("requests", "limits"):
                for name, amount in _mapping(resources.get(kind)).items():
                    if not str(name).startswith(prefixes):
                        continue
                    names.add(str(name))
                    if init or kind != "requests":
                        continue  # init containers run before, not beside: they add nothing held
                    parsed = parse_count(str(amount))
                    if parsed is None:
                        unreadable = unreadable or f"the request {name}={shown(amount)} is not a whole count of NPUs"
                    else:
                        count += parsed
    return AcceleratorRequest(tuple(sorted(names)), count, unreadable)
