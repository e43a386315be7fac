"""A coroutine run at once inside the caller's callback (eager.py): done before the caller
returns when it never waits; resumed as a task would be when it does, in its own context."""
from __future__ import annotations

import asyncio
import contextvars

import pytest

from homing.kube.admission import eager

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("eager_test", default="outside")


async def no_wait() -> str:
    VAR.set("inside")
    return VAR.get()


async def waits(awaitable_factory) -> tuple[str, str]:
    token = VAR.set("inside")
    try:
        before = VAR.get()
        await awaitable_factory()
        return before, VAR.get()
    finally:
        VAR.reset(token)  # the same context after the wait, or this raises


async def test_a_coroutine_that_never_waits_is_done_before_start_returns() -> None:
    done = eager.start(no_wait(), asyncio.get_running_loop())
    assert done.done() and done.result() == "inside"
    assert VAR.get() == "outside"  # its context is its own


@pytest.mark.parametrize("wait", [lambda: asyncio.sleep(0.01), lambda: asyncio.sleep(0)], ids=["future", "bare-yield"])
async def test_a_coroutine_that_waits_goes_on_in_its_own_context(wait) -> None:
    result = eager.start(waits(wait), asyncio.get_running_loop())
    assert not result.done()
    assert await result == ("inside", "inside")
    assert VAR.get() == "outside"


async def test_a_failure_before_or_after_a_wait_is_the_futures() -> None:
    async def fails(wait: bool) -> None:
        if wait:
            await asyncio.sleep(0)
        raise ValueError("boom")

    loop = asyncio.get_running_loop()
    for wait in (False, True):
        with pytest.raises(ValueError, match="boom"):
            await eager.start(fails(wait), loop)


async def test_an_awaited_futures_failure_is_raised_inside_the_coroutine() -> None:
    loop = asyncio.get_running_loop()
    awaited: asyncio.Future[None] = loop.create_future()

    async def catches() -> str:
        try:
            await awaited
        except KeyError:
            return "caught"
        return "not raised"

    result = eager.start(catches(), loop)
    awaited.set_exception(KeyError("k"))
    assert await result == "caught"
