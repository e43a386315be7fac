"""Leader election's state machine (engine/replicas/leadership.py): client-go's rules as a table."""
from __future__ import annotations

import pytest

from homing.engine.replicas.leadership import Action, LeaseView, State, Timings, failed, step, succeeded

T = Timings(lease=15, renew=10, retry=2)


def me(**kw) -> State:
    return State(me="a", timings=T, **kw)


@pytest.mark.parametrize(
    "state, lease, now, action, leading_after",
    [
        # nobody has made the Lease yet
        (me(), None, 0, Action.CREATE, False),
        # held by b, fresh by our clock: wait
        (me(seen="b@1", seen_at=0), LeaseView("b", "b@1"), 14.9, Action.WAIT, False),
        # held by b, unchanged for a whole lease duration by our clock: take it
        (me(seen="b@1", seen_at=0), LeaseView("b", "b@1"), 15.0, Action.ACQUIRE, False),
        # b renewed just now: the clock starts again, whatever b's own timestamps say
        (me(seen="b@1", seen_at=0), LeaseView("b", "b@2"), 20, Action.WAIT, False),
        # released (no holder): take it at once
        (me(seen="b@1", seen_at=0), LeaseView(None, "released"), 1, Action.ACQUIRE, False),
        # ours: renew; still leading while the last renewal is under the deadline
        (me(seen="a@1", seen_at=0, renewed_at=0), LeaseView("a", "a@1"), 9.9, Action.RENEW, True),
        # ours but the last renewal is past the deadline: try to renew, not leading meanwhile
        (me(seen="a@1", seen_at=0, renewed_at=0), LeaseView("a", "a@1"), 10, Action.RENEW, False),
        # someone took it from us: wait and stop leading at once
        (me(seen="a@1", seen_at=0, renewed_at=5), LeaseView("b", "b@1"), 6, Action.WAIT, False),
    ],
)
def test_step(state, lease, now, action, leading_after):
    new, got = step(state, lease, now)
    assert got is action
    assert new.leading(now) is leading_after


def test_a_successful_write_leads_until_the_renew_deadline():
    state, action = step(me(), None, 100)
    state = succeeded(state, action, "a@1", 100)
    assert state.leading(109.9) and not state.leading(110)


def test_a_failed_renewal_lapses_on_its_own():
    state = succeeded(me(seen="a@1", seen_at=0), Action.RENEW, "a@2", 0)
    state = failed(step(state, LeaseView("a", "a@2"), 4)[0])
    assert state.leading(9) and not state.leading(10)


def test_the_holder_steps_down_before_anyone_may_take_over():
    """The old holder's last successful write was sent at 0; a standby that saw it no earlier than 0
    may take over at 15, and the holder stopped leading at 10."""
    holder = succeeded(me(), Action.RENEW, "a@1", 0)
    standby = State(me="b", timings=T)
    standby, _ = step(standby, LeaseView("a", "a@1"), 0.5)
    assert step(standby, LeaseView("a", "a@1"), 15.4)[1] is not Action.ACQUIRE
    assert step(standby, LeaseView("a", "a@1"), 15.5)[1] is Action.ACQUIRE
    assert not holder.leading(10)


@pytest.mark.parametrize("lease, renew, retry", [(10, 10, 2), (15, 10, 9), (15, 2.4, 2), (0, 0, 0)])
def test_timings_refused_when_the_holder_could_overlap(lease, renew, retry):
    with pytest.raises(ValueError):
        Timings(lease=lease, renew=renew, retry=retry)
