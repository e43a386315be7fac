"""Garbage-collector pauses are counted, and the loaded memory is kept out of the
collector's walks (a full walk of a million ranks' objects stopped the loop 0.6 s)."""
from __future__ import annotations

import gc

import pytest
from prometheus_client import REGISTRY

from homing.engine.memory.entries import RankEntry
from homing.kube.health import gcpause


@pytest.fixture
def unfrozen():
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


def collections_seen(generation: int) -> float:
    return REGISTRY.get_sample_value("homing_gc_pause_seconds_count", {"generation": str(generation)}) or 0.0


def test_every_collection_is_counted_by_generation():
    gcpause.watch()
    gcpause.watch()  # twice: still one callback
    assert gc.callbacks.count(gcpause._on_collection) == 1
    before = [collections_seen(g) for g in (0, 1, 2)]
    gc.collect(0)
    gc.collect(2)
    after = [collections_seen(g) for g in (0, 1, 2)]
    assert after[0] >= before[0] + 1 and after[2] >= before[2] + 1


def test_settled_objects_are_left_out_of_later_walks(unfrozen):
    loaded = [RankEntry(node=f"node-{i}", bound_at=float(i)) for i in range(2_000)]
    assert any(o is loaded for o in gc.get_objects())  # tracked: every full collection walks it
    frozen = gcpause.settle()
    assert frozen >= len(loaded)
    assert not any(o is loaded for o in gc.get_objects())  # in the permanent generation now
    made_later = [RankEntry(node="node-x", bound_at=0.0)]
    assert any(o is made_later for o in gc.get_objects())  # what comes after is collected as before
