"""The READMEs' measured figures are quoted, not retold: every decimal figure and quotation in
their Cost and Results sections is found word for word in docs/benchmarks.md, and the kind
times in docs/kind.md. When a page of figures changes, this says which README line to follow."""
from __future__ import annotations

import re

import pytest

from .prose import ROOT

SECTIONS = {"README.md": ("## Cost", "## Results"), "README.zh-CN.md": ("## 资源开销", "## 结果")}
KIND_SECTIONS = {"README.md": "## Try it on kind", "README.zh-CN.md": "## 在 kind 上体验"}


def section(text: str, heading: str) -> str:
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end != -1 else None]


def figures(text: str) -> list[str]:
    """Decimal figures, with the one after a slash kept as a pair (880 / 888)."""
    text = re.sub(r"`[^`]*`", "", text)  # commands and settings
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?: / \d+(?:\.\d+)?)+(?![\w.])|(?<![\w.])\d+\.\d+(?![\w.])", text)


@pytest.mark.parametrize("readme", sorted(SECTIONS))
def test_cost_and_results_figures_are_in_benchmarks_md(readme: str):
    text = (ROOT / readme).read_text()
    source = (ROOT / "docs" / "benchmarks.md").read_text()
    quoted = []
    for heading in SECTIONS[readme]:
        part = section(text, heading)
        quoted += [f for f in figures(part) if f not in source]
        quoted += [q for q in re.findall(r"[\"“]([A-Za-z][^\"”]+)[\"”]", part) if q not in source]
    assert quoted == []


@pytest.mark.parametrize("readme", sorted(KIND_SECTIONS))
def test_kind_times_are_in_kind_md(readme: str):
    part = section((ROOT / readme).read_text(), KIND_SECTIONS[readme])
    source = (ROOT / "docs" / "kind.md").read_text()
    times = re.findall(r"\d+ min \d+ s", part) + [f"{m} min {s} s" for m, s in re.findall(r"(\d+) 分 (\d+) 秒", part)]
    assert times and [t for t in times if t not in source] == []
