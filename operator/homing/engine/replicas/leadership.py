"""Leader election over one `coordination.k8s.io` Lease, as a pure state machine (behaviour.md "Operation").

The rules are client-go's: a candidate may take the Lease when nobody holds it, or when
the record it sees has not changed for a whole lease duration *by its own clock* (the
holder's timestamps are never compared with ours, so clock skew does not matter); the
holder renews every retry period and stops acting as leader as soon as its last
successful renewal is older than the renew deadline, which is shorter than the lease
duration: it has stepped down before anyone else may take over.

`step(state, lease, now)` returns the new state and the one action to try; the adapter
(operator/leader.py) performs it and reports back with `succeeded`/`failed`."""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum


class Action(str, Enum):
    CREATE = "create"  # no Lease yet: create it holding it
    ACQUIRE = "acquire"  # free or expired: write ourselves as holder
    RENEW = "renew"  # ours: write a new renew time
    WAIT = "wait"  # someone else holds it and it is fresh


@dataclass(frozen=True)
class Timings:
    lease: float = 15.0
    renew: float = 10.0
    retry: float = 2.0

    def __post_init__(self) -> None:
        # client-go's own check: the holder must step down before anyone else may take over,
        # and must get a few tries at renewing before that.
        if not (self.lease > self.renew > 1.2 * self.retry > 0):
            raise ValueError(f"leader election needs lease > renew > 1.2 * retry > 0, got {self}")


@dataclass(frozen=True)
class LeaseView:
    """What the adapter read: the holder and the record's identity (its renew time and
    transitions, as the API server holds them; opaque here)."""

    holder: str | None
    record: str  # changes whenever the holder renews or changes


@dataclass(frozen=True)
class State:
    me: str
    timings: Timings = Timings()
    seen: str | None = None  # the record last seen
    seen_at: float = float("-inf")  # our clock when it last changed
    renewed_at: float | None = None  # our clock at our last successful write as holder

    def leading(self, now: float) -> bool:
        """Acting as leader: our last renewal is younger than the renew deadline."""
        return self.renewed_at is not None and now - self.renewed_at < self.timings.renew


def step(state: State, lease: LeaseView | None, now: float) -> tuple[State, Action]:
    """What to do this round, given the Lease as read (None: there is none)."""
    if lease is None:
        return replace(state, seen=None, seen_at=now), Action.CREATE
    if lease.record != state.seen:
        state = replace(state, seen=lease.record, seen_at=now)
    if lease.holder == state.me:
        return state, Action.RENEW
    if not lease.holder or now - state.seen_at >= state.timings.lease:
        return state, Action.ACQUIRE
    return replace(state, renewed_at=None), Action.WAIT  # another holder is fresh: we are not leading


def succeeded(state: State, action: Action, written: str, now: float) -> State:
    """Our write went through; `written` is the record we wrote."""
    if action is Action.WAIT:
        return state
    return replace(state, seen=written, seen_at=now, renewed_at=now)


def failed(state: State) -> State:
    """A conflict or an error: nothing changes; `leading` lapses on its own at the deadline."""
    return state
