"""An overlay's object (manifests/mindcluster) as its base object plus template blocks that
only a chart value switches on: added mapping keys and appended list items. Any other
difference is Unsupported, and the caller keeps the two objects whole under if/else."""
from __future__ import annotations

from typing import Any

from homing.tools.chart.placeholders import Placeholders


class Unsupported(Exception):
    pass


def merge(base: Any, over: Any, condition: str, marks: Placeholders) -> Any:
    """`base` with `over`'s additions in `{{- if condition }}` blocks."""
    if isinstance(base, dict) and isinstance(over, dict):
        missing = set(base) - set(over)
        if missing:
            raise Unsupported(f"overlay drops {sorted(missing)}")
        out = {key: merge(value, over[key], condition, marks) for key, value in base.items()}
        added = {key: value for key, value in over.items() if key not in base}
        if added:
            out[marks.block(f"{{{{- if {condition} }}}}", added)] = None
        return out
    if isinstance(base, list) and isinstance(over, list):
        if len(over) < len(base):
            raise Unsupported("overlay drops list items")
        out_list = [merge(b, o, condition, marks) for b, o in zip(base, over)]
        if len(over) > len(base):
            out_list.append(marks.block(f"{{{{- if {condition} }}}}", over[len(base) :]))
        return out_list
    if base != over:
        raise Unsupported(f"overlay changes {base!r} to {over!r}")
    return base
