"""Term value lists are bounded (behaviour.md "Weights"): keep the most relevant names, say if cut."""
from __future__ import annotations

from collections.abc import Iterable


def bounded(names: Iterable[str], limit: int) -> tuple[tuple[str, ...], bool]:
    """The first `limit` distinct names, in the caller's order of relevance, and whether
    any were cut. Callers pass names most relevant first."""
    kept: list[str] = []
    seen: set[str] = set()
    cut = False
    for name in names:
        if name in seen:
            continue
        if len(kept) == limit:
            cut = True
            break
        seen.add(name)
        kept.append(name)
    return tuple(sorted(kept)), cut
