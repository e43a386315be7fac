"""A listing (and the ConfigMap reflectors' watch) hands the loop back after a time slice of
handled objects, not after a count: at 5,000 nodes 50 pod events took ~20 ms, all of it an admission's wait (behaviour.md "Operation")."""
from __future__ import annotations

import asyncio

import pytest

from homing.kube.watch.lister import Slicer


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def interleaving(cost_s: float, objects: int, slice_s: float = 0.002) -> list[str]:
    """Handles `objects` objects of `cost_s` each; where another task got the loop in between."""
    clock = FakeClock()
    slicer = Slicer(slice_s, clock)
    order: list[str] = []
    stop = asyncio.Event()

    async def admission() -> None:
        while not stop.is_set():
            order.append("admission")
            await asyncio.sleep(0)

    other = asyncio.create_task(admission())
    await asyncio.sleep(0)
    order.clear()
    for i in range(objects):
        clock.now += cost_s
        order.append(str(i))
        await slicer.turn()
    stop.set()
    await other
    return order


def longest_run(order: list[str]) -> int:
    """The most objects handled in a row without the other task running."""
    best = run = 0
    for item in order:
        run = 0 if item == "admission" else run + 1
        best = max(best, run)
    return best


SLICE = 1 / 256  # ~4 ms; powers of two keep the fake clock's sums exact


@pytest.mark.parametrize(
    ("cost_s", "most_in_a_row"),
    [
        (SLICE / 2, 2),  # a costly event (a big pod): the loop turns every second one
        (SLICE / 4, 4),
        (SLICE / 16, 16),  # cheap events go in batches: no turn per object
        (SLICE * 2, 1),  # one object already past the slice: a turn after each
    ],
)
async def test_objects_in_a_row_stay_within_the_slice(cost_s: float, most_in_a_row: int):
    order = await interleaving(cost_s, objects=64, slice_s=SLICE)
    assert longest_run(order) == most_in_a_row, order


async def test_a_zero_slice_turns_after_every_object():
    order = await interleaving(0.0, objects=5, slice_s=0)
    assert longest_run(order) == 1
