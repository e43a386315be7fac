"""Events go through a queued, aggregating recorder (issue 41, bounded API writes): before,
every placement spawned its own POST task, so a 5,000-pod burst was 5,000 concurrent writes to
the API server and 5,000 tasks in memory. Now one worker posts in order, a repeat is counted
not posted, a full queue drops and counts, and a switch turns Events off. The API server here
is a stand-in that records what reached it; the real one receives them in the integration tests."""
from __future__ import annotations

import asyncio

from homing.config import Events
from homing.kube.signals import metrics
from homing.kube.signals.events import EventPoster


class Recording:
    """What the API server received, and how many POSTs were in flight at once."""

    def __init__(self, fail: int = 0) -> None:
        self.bodies: list[dict] = []
        self.in_flight = self.most_in_flight = 0
        self.fail = fail

    async def request(self, method: str, path: str, body: dict | None = None) -> dict:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)
            if self.fail:
                self.fail -= 1
                raise OSError("connection refused")
            assert body is not None
            self.bodies.append(body)
            return {}
        finally:
            self.in_flight -= 1


def pod(i: int) -> dict:
    return {"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"u{i}"}}


def counted(result: str) -> float:
    return metrics.EVENTS.labels(result)._value.get()


async def settle(poster: EventPoster) -> None:
    while poster._worker is not None and not poster._worker.done():
        await asyncio.sleep(0)


async def test_a_burst_is_posted_by_one_worker_and_bounded_by_the_queue():
    api = Recording()
    poster = EventPoster(api, settings=Events(queue=100))  # type: ignore[arg-type]
    dropped = counted("dropped")
    for i in range(5000):
        poster.post(pod(i), "Normal", "PlacedHome", "bound on its home")
    await settle(poster)
    assert api.most_in_flight == 1, "one POST at a time"
    assert len(api.bodies) <= 101, "the queue's worth, and the one the worker took first"
    assert counted("dropped") - dropped == 5000 - len(api.bodies)
    assert [b["involvedObject"]["name"] for b in api.bodies] == [f"p{i}" for i in range(len(api.bodies))], "in order"


async def test_a_repeat_for_the_same_object_is_counted_not_posted():
    clock = [0.0]
    api = Recording()
    poster = EventPoster(api, settings=Events(aggregate_seconds=600), clock=lambda: clock[0])  # type: ignore[arg-type]
    aggregated = counted("aggregated")
    for _ in range(3):
        poster.post(pod(1), "Warning", "InvalidRank", "rank 'x' is not a number")
    poster.post(pod(1), "Warning", "InvalidRank", "another message")
    poster.post(pod(2), "Warning", "InvalidRank", "rank 'x' is not a number")
    await settle(poster)
    assert len(api.bodies) == 3 and counted("aggregated") - aggregated == 2
    clock[0] = 601.0
    poster.post(pod(1), "Warning", "InvalidRank", "rank 'x' is not a number")
    await settle(poster)
    assert len(api.bodies) == 4, "past the window it is posted again"


async def test_the_aggregation_keys_are_bounded():
    poster = EventPoster(Recording(), settings=Events(queue=10))  # type: ignore[arg-type]
    for i in range(1000):
        poster.post(pod(i), "Normal", "PlacedHome", "m")
        await settle(poster)
    assert len(poster.recent) <= 40


async def test_a_failed_post_does_not_stop_the_next():
    api = Recording(fail=1)
    poster = EventPoster(api)  # type: ignore[arg-type]
    failed = counted("failed")
    poster.post(pod(1), "Normal", "PlacedHome", "m")
    poster.post(pod(2), "Normal", "PlacedHome", "m")
    await settle(poster)
    assert counted("failed") - failed == 1 and [b["involvedObject"]["name"] for b in api.bodies] == ["p2"]


async def test_switched_off_or_not_leading_nothing_is_posted():
    api = Recording()
    for poster in (EventPoster(api, settings=Events(enabled=False)),  # type: ignore[arg-type]
                   EventPoster(api, enabled=lambda: False)):  # type: ignore[arg-type]
        poster.post(pod(1), "Normal", "PlacedHome", "m")
        await settle(poster)
    assert api.bodies == []
