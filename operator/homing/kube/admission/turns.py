"""Admission on a loop of its own, and the turns it takes with the operator's loop.

The operator's loop runs kopf's watch work: under a burst a turn of it holds thousands of
events, and a review answered on that loop waits for the turn (docs/design.md, "Admission on
a loop of its own"). So the webhook server runs on its own loop, in a thread of its own, and
the two loops share homing's state (the memory index, the cluster view, the admission's own
leftovers) by taking turns under one lock:

- every callback the operator's loop runs holds the lock for its length. A callback is a task's
  step between two awaits: the unit that was already atomic when everything ran on one loop,
  so each piece of code sees the state exactly as it did then;
- a decision holds the lock for its length, and goes first: once it asks, the operator's loop
  hands over at the end of the callback it is in, and waits (at most `HAND_OVER_SECONDS`)
  until the decision is done. A review waits one callback, not one turn.

Only the operator's loop takes turns (`TurnTakingLoop`, made by `python -m homing run`); the
server serves on the caller's loop wherever that loop does not (`takes_turns`)."""
from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from homing.kube.signals import metrics

# How long the operator's loop waits for a decision it handed over to: a decision takes about
# a millisecond; past this the loop goes on and the decision takes the lock after one more callback.
HAND_OVER_SECONDS = 0.05


class Turns:
    """The lock the operator's loop and the admission share, with the admission first."""

    def __init__(self, hand_over_seconds: float = HAND_OVER_SECONDS) -> None:
        self.hand_over_seconds = hand_over_seconds
        self._lock = threading.Lock()
        self._asking = 0  # decisions waiting for the lock: written by the admission's thread only
        self._handed = threading.Event()  # set when a decision that asked is done

    def run(self, callback: Callable[..., Any], *args: Any) -> None:
        """One of the operator's loop's callbacks, under the lock; then, should a decision be
        waiting, the lock is its until it is done."""
        with self._lock:
            callback(*args)
        if self._asking:
            self._handed.wait(self.hand_over_seconds)

    @contextmanager
    def decision(self) -> Iterator[None]:
        """A decision's hold of the lock, taken before the operator's next callback."""
        self._handed.clear()
        self._asking += 1
        asked = time.perf_counter()
        try:
            self._lock.acquire()
        finally:
            self._asking -= 1
        try:
            with suppress(Exception):  # bookkeeping: never what keeps the lock
                metrics.ADMISSION_TURN_WAIT.observe(time.perf_counter() - asked)
            yield
        finally:
            self._lock.release()
            self._handed.set()


class TurnTakingLoop(asyncio.SelectorEventLoop):
    """The operator's loop: each callback it runs holds `turns`. Task steps, futures' callbacks
    and timers all reach the loop through these three calls; what they do not wrap (a socket's
    readiness callback) only moves bytes into buffers and futures, which wake tasks through them."""

    def __init__(self, turns: Turns) -> None:
        super().__init__()
        self.turns = turns

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:  # type: ignore[override]
        return super().call_soon(self.turns.run, callback, *args, context=context)

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:  # type: ignore[override]
        return super().call_soon_threadsafe(self.turns.run, callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.TimerHandle:  # type: ignore[override]
        return super().call_at(when, self.turns.run, callback, *args, context=context)


def takes_turns(loop: asyncio.AbstractEventLoop) -> Turns | None:
    """The turns of a loop that takes them; None for any other loop."""
    return loop.turns if isinstance(loop, TurnTakingLoop) else None
