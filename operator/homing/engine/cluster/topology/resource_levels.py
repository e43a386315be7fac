"""MindCluster's resource-level-config: which node label names each multilevel level,
per topology tree. `{"<tree>": {"level1": {"label": "..."}, "level2": {...}}}`; a node
picks its tree with the label `huawei.com/topotree` (default tree "default")."""
from __future__ import annotations

import json
import re

TOPOTREE_LABEL = "huawei.com/topotree"
DEFAULT_TREE = "default"
_LEVEL = re.compile(r"^level([1-9][0-9]*)$")

LevelLabels = dict[str, tuple[tuple[str, str], ...]]  # tree -> ((level name, label key), ...), innermost first


def parse_resource_levels(text: str | None) -> tuple[LevelLabels, str | None]:
    """The level labels of each tree, and a warning when the config is malformed
    (then no multilevel levels are known, and multilevel jobs use the node strategy)."""
    if not text:
        return {}, None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        return {}, f"resource-level-config is not JSON: {err.msg} at {err.pos}"
    if not isinstance(raw, dict):
        return {}, "resource-level-config must map tree names to levels"
    trees: LevelLabels = {}
    for tree, levels in raw.items():
        if not isinstance(levels, dict):
            return {}, f"resource-level-config tree {tree!r} must map level names to {{label: ...}}"
        found = []
        for name, spec in levels.items():
            match = _LEVEL.match(str(name))
            label = spec.get("label") if isinstance(spec, dict) else None
            if not match or not isinstance(label, str) or not label:
                return {}, f"resource-level-config tree {tree!r}: {name!r} needs the form levelN: {{label: <key>}}"
            found.append((int(match.group(1)), str(name), label))
        trees[str(tree)] = tuple((name, label) for _, name, label in sorted(found))
    return trees, None


def tree_of(labels: dict[str, str]) -> str:
    return labels.get(TOPOTREE_LABEL) or DEFAULT_TREE
