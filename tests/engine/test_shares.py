"""Pool shares across replicas (engine/replicas/shares.py, behaviour.md "Admission"): on random histories of replicas
joining, dying and losing the API server, no node is ever promisable by two replicas at
once, and a node passes from one replica to another only after a quiet gap long enough
for the pod watch to tell the new one what the old one promised."""
from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import example, given, settings, strategies as st

from homing.engine.replicas.shares import MemberLease, Membership, owner_of

LEASE, RENEW, RETRY, GRACE = 15.0, 10.0, 2.0, 10.0
TICK = 0.5
EPSILON = 1e-9
NODES = [f"n{i}" for i in range(12)]


@dataclass
class Replica:
    name: str
    start: float
    stop_renewing: float  # dies, or loses the API server
    dies: bool  # True: stops answering too; False: keeps serving admissions, unable to renew
    poll_offset: float
    view: Membership | None = None

    def serving(self, t: float) -> bool:
        return t >= self.start and (not self.dies or t < self.stop_renewing)


replica = st.builds(
    lambda i, start, life, dies, offset: Replica(f"r{i}", start, start + life, dies, offset),
    st.integers(0, 1000),
    st.floats(0, 60),
    st.floats(1, 120),
    st.booleans(),
    st.floats(0, RETRY),
)


def polls_at(t: float, first: float) -> bool:
    """Whether a replica whose polls fall at first, first + RETRY, ... polls on the tick at t: the
    tick at or after each poll time (within EPSILON of a tick counts as on it). Computed as a
    multiple, not as `(t - first) % RETRY`, whose rounding skipped whole polls (a replica at
    first = 2e-16 polled every 4 s, slower than the retry period every replica keeps)."""
    k = math.floor((t - first) / RETRY + EPSILON)
    return k >= 0 and 0 <= t - (first + k * RETRY) + EPSILON < TICK


def simulate(replicas: list[Replica], end: float = 150.0):
    leases: dict[str, str] = {}  # identity -> record
    for r in replicas:
        r.view = Membership(me=r.name, lease_seconds=LEASE, renew_seconds=RENEW, grace_seconds=GRACE)
    t = 0.0
    while t <= end:
        for r in replicas:
            if not r.serving(t):
                continue
            # each replica polls every retry period: renew its own Lease, then list them all
            if polls_at(t, r.start + r.poll_offset):
                if t < r.stop_renewing:
                    leases[r.name] = f"{r.name}@{t}"
                    r.view.renewed(t)
                r.view.observe([MemberLease(m, rec) for m, rec in leases.items()], t)
        yield t, {n: {r.name for r in replicas if r.serving(t) and r.view.may_promise("ns/owner", n, t)} for n in NODES}
        t += TICK


@settings(max_examples=60, deadline=None)
@given(st.lists(replica, min_size=1, max_size=4, unique_by=lambda r: r.name))
# found by hypothesis: with the modulo schedule r2 polled every 4 s and handed n2 over 7.0 s after
@example([Replica("r0", 0.0, 1.0, False, 1.0), Replica("r2", 5.3e-91, 1.0, False, 2.220446049250313e-16),
          Replica("r1", 0.0, 3.0, False, 0.5)])
def test_no_node_is_promisable_by_two_replicas_and_hand_overs_wait(replicas):
    last: dict[str, tuple[str, float]] = {}
    for t, holders in simulate(replicas):
        for node, who in holders.items():
            assert len(who) <= 1, (t, node, who)
            if who:
                (name,) = who
                before = last.get(node)
                if before and before[0] != name:
                    assert t - before[1] >= GRACE - RETRY - TICK, (node, before, name, t)
                last[node] = (name, t)


def test_a_replica_polls_once_every_retry_period_whatever_its_offset():
    for first in (0.0, 2.220446049250313e-16, 0.25, 0.5, 1.9999999999999998, 1.0):
        ticks = [i * TICK for i in range(200) if polls_at(i * TICK, first)]
        assert all(b - a == RETRY for a, b in zip(ticks, ticks[1:])), (first, ticks[:6])
        assert ticks[0] - first < TICK


def test_a_lone_replica_promises_every_node_at_once():
    replicas = [Replica("r0", 0, 10_000, True, 0)]
    seen = dict(simulate(replicas, end=1))
    assert all(who == {"r0"} for who in seen[0.0].values())


def test_a_replica_joining_another_waits_the_grace_period():
    a, b = Replica("a", 0, 10_000, True, 0), Replica("b", 30, 10_000, True, 0.3)
    timeline = dict(simulate([a, b], end=30 + GRACE + RETRY))
    assert not any("b" in who for who in timeline[30 + GRACE - RETRY].values())
    assert any(who == {"b"} for who in timeline[30 + GRACE + RETRY].values())


def test_two_replicas_split_the_pool_and_the_survivor_takes_all():
    a, b = Replica("a", 0, 30, True, 0), Replica("b", 0, 10_000, True, 1)
    timeline = dict(simulate([a, b], end=80))
    split = timeline[25.0]
    assert {n for n, who in split.items() if who == {"a"}} == {n for n in NODES if owner_of("ns/owner", n, {"a", "b"}) == "a"}
    assert all(who == {"b"} for who in timeline[80.0].values())


def test_rendezvous_moves_only_the_departed_members_nodes():
    before = {n: owner_of("o", n, ["a", "b", "c"]) for n in NODES * 3}
    after = {n: owner_of("o", n, ["a", "b"]) for n in NODES * 3}
    assert all(after[n] == before[n] for n in before if before[n] != "c")
