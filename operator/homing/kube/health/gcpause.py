"""Python's cyclic garbage collector, on an operator that holds a million ranks: each
collection stops the event loop while it walks the generation it collects, so its pauses
are counted (`homing_gc_pause_seconds`), and once the memory is loaded `settle()` moves
every object alive then (the index: millions of them, long-lived) out of the collector's
walks with `gc.freeze()`. Reference counting still frees them when they go."""
from __future__ import annotations

import gc
import time
from typing import Any

from homing.kube.signals import logs, metrics

log = logs.get("homing.gc")

_started: dict[int, float] = {}


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    generation = int(info.get("generation", 0))
    if phase == "start":
        _started[generation] = time.perf_counter()
        return
    began = _started.pop(generation, None)
    if began is None:
        return
    try:
        metrics.GC_PAUSE.labels(str(generation)).observe(time.perf_counter() - began)
    except Exception:  # at interpreter shutdown the metrics may be gone; a gc callback must not raise
        pass


def watch() -> None:
    """Counts every collection's pause from now on (once per process)."""
    if _on_collection not in gc.callbacks:
        gc.callbacks.append(_on_collection)


def settle() -> int:
    """After the start-up load: collect once, then keep what survived out of later walks.
    Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("start-up objects kept out of garbage collection", objects=frozen)
    return frozen
