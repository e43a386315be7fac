"""Every metric homing exports is named in the docs an operator reads: docs/monitoring.md (the
dashboard's panels and the rest) or docs/operations.md (replicas, probes, certificates)."""
from __future__ import annotations

import re

from prometheus_client import REGISTRY

import homing.kube.signals.metrics  # noqa: F401  (registers every metric)

from .prose import ROOT


def exported() -> set[str]:
    """The names as scraped: a counter's family gets its _total back."""
    return {m.name + ("_total" if m.type == "counter" else "") for m in REGISTRY.collect() if m.name.startswith("homing_")}


def test_every_metric_is_documented():
    text = (ROOT / "docs" / "monitoring.md").read_text() + (ROOT / "docs" / "operations.md").read_text()
    names = exported()
    assert len(names) > 20
    missing = sorted(n for n in names if not re.search(rf"\b{n}\b", text))
    assert missing == []
