"""Runs a coroutine at once, inside the caller's callback, up to its first real wait; a task
would begin it only at the loop's next turn. Under a burst of watch events a turn of the
operator's loop takes milliseconds, and a review served through tasks waits for several of
them before its handler starts (docs/design.md, "A review answered in the turn it arrives").

What follows a real wait is run as a task would run it: resumed by the awaited future's
callback, in the same context. Code that asks for `asyncio.current_task()` gets none until
then; kopf's admission path and homing's handler do not ask."""
from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def start(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop) -> asyncio.Future[T]:
    """A future of the coroutine's result; already done when it never had to wait."""
    result: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def step(error: BaseException | None = None) -> None:
        try:
            awaited = context.run(coro.throw, error) if error is not None else context.run(coro.send, None)
        except StopIteration as done:
            result.set_result(done.value)
            return
        except BaseException as err:  # the coroutine's own failure is the future's
            result.set_exception(err)
            return
        if awaited is None:  # a bare yield, as asyncio.sleep(0) makes: go on at the next turn
            loop.call_soon(step)
        elif getattr(awaited, "_asyncio_future_blocking", False):
            awaited._asyncio_future_blocking = False
            awaited.add_done_callback(resume)
        else:
            loop.call_soon(step, RuntimeError(f"a coroutine run eagerly yielded {awaited!r}"))

    def resume(awaited: asyncio.Future[Any]) -> None:
        try:
            awaited.result()
        except BaseException as err:  # handed back into the coroutine, as a task would
            step(err)
            return
        step()

    step()
    return result
