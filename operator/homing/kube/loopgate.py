"""The operator's event loop runs every callback holding one lock, the gate; the admission
thread takes the gate between two callbacks, ahead of the loop's queue. A decision made on
that thread therefore sees the memory exactly as a callback on the loop would (between two
steps of any handler), but it no longer waits for the loop to reach it: behind a burst of
watch events, that wait was most of the API server's wait for homing (design.md "Admission").

Every callback the loop schedules (call_soon, call_at and call_later, call_soon_threadsafe)
is gated: those run every task step, so every line of homing's handlers. Transport reads and
signal handlers run ungated; they touch sockets and flags, never the memory."""
from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class Gate:
    """One holder at a time; a thread waiting in `held()` goes before the loop's next callback.
    The second lock is the queue to the first: a waiting thread keeps it, so the loop, which
    takes it before the gate at every callback, lines up behind that thread."""

    def __init__(self) -> None:
        self._gate = threading.Lock()
        self._queue = threading.Lock()
        self.loop_thread: int | None = None  # set when the loop runs; on it, `held()` holds already

    def run(self, callback: Callable[..., Any], *args: Any) -> None:
        """One of the loop's callbacks, the gate held."""
        with self._queue:
            self._gate.acquire()
        try:
            callback(*args)
        finally:
            self._gate.release()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The gate, from another thread; a no-op inside the loop's own callbacks (held there)."""
        if threading.get_ident() == self.loop_thread:
            yield
            return
        with self._queue:
            self._gate.acquire()
        try:
            yield
        finally:
            self._gate.release()


class GatedLoop(asyncio.SelectorEventLoop):
    """The operator's loop (`python -m homing` runs on it): a selector loop whose callbacks each
    run through `gate.run`."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate()

    def run_forever(self) -> None:
        self.gate.loop_thread = threading.get_ident()
        super().run_forever()

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:
        return super().call_soon(self.gate.run, callback, *args, context=context)

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:
        return super().call_soon_threadsafe(self.gate.run, callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.TimerHandle:
        return super().call_at(when, self.gate.run, callback, *args, context=context)  # call_later comes here too


class NoGate:
    """Where the loop is not gated (an ordinary loop: the adapters' tests): decisions are made on
    that loop, so they need nothing."""

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        yield


def of(loop: asyncio.AbstractEventLoop) -> Gate | NoGate:
    return loop.gate if isinstance(loop, GatedLoop) else NoGate()
