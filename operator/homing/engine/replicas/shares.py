"""Which replica may promise which pool node (behaviour.md "Admission": no two pending pods hold the same
promise, also when several replicas serve admissions).

Each live replica keeps a member Lease. Every pool node of an owner belongs to exactly one
live member, by rendezvous hashing of (owner, node, member): every replica that sees the
same members computes the same owner, and when a member comes or goes only that
member's nodes move. A replica promises a node only when the node has been its own under
*every* member set it believed in during the last `grace` seconds, and only while its
own member Lease is fresh. Views of the members lag the truth by at most the time it
takes to notice a change (a retry period) plus the lease's expiry rules; with `grace`
longer than that lag, two replicas never both hold a node as theirs at the same moment
(a replica that finds no other member Lease at all, fresh or stale, has nothing to wait for)
(tests/engine/test_shares.py checks this on random histories). Promises already made
are learned from the pod watch (`homing.io/home` on pending pods), so the node a departed
replica promised stays promised after its share moves."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field


def owner_of(owner_key: str, node: str, members: Iterable[str]) -> str | None:
    """The member that may promise `node` of `owner_key`: highest rendezvous hash wins."""
    best, best_score = None, b""
    for member in members:
        score = hashlib.blake2b(f"{owner_key}\x00{node}\x00{member}".encode(), digest_size=8).digest()
        if best is None or score > best_score or (score == best_score and member > best):
            best, best_score = member, score
    return best


@dataclass(frozen=True)
class MemberLease:
    """One replica's member Lease as seen: its identity and the record (opaque, changes on each renewal)."""

    identity: str
    record: str


@dataclass
class Membership:
    """The live members as this replica sees them, and the member sets it believed in
    recently. Times are this replica's own clock."""

    me: str
    lease_seconds: float
    renew_seconds: float
    grace_seconds: float
    seen: dict[str, tuple[str, float]] = field(default_factory=dict)  # identity -> (record, our time it changed)
    own_renewed_at: float | None = None
    history: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # (since, members), oldest first

    def observe(self, leases: Iterable[MemberLease], now: float) -> frozenset[str]:
        """Fold in a listing of member Leases; returns the live members."""
        listed = {}
        for lease in leases:
            old = self.seen.get(lease.identity)
            listed[lease.identity] = old if old is not None and old[0] == lease.record else (lease.record, now)
        self.seen = listed
        return self._record(now)

    def renewed(self, now: float) -> None:
        """Our own member Lease was written; `now` is when the write was sent."""
        self.own_renewed_at = now

    def live(self, now: float) -> frozenset[str]:
        others = {m for m, (_, at) in self.seen.items() if m != self.me and now - at < self.lease_seconds}
        if self.own_renewed_at is not None and now - self.own_renewed_at < self.renew_seconds:
            others.add(self.me)
        return frozenset(others)

    def _record(self, now: float) -> frozenset[str]:
        members = self.live(now)
        if not self.history:
            # Alone from the first listing (which counts every listed Lease, however old, as
            # live): nobody else can be promising, so there is nothing to wait for.
            self.history.append((float("-inf") if members == {self.me} else now, members))
        elif self.history[-1][1] != members:
            self.history.append((now, members))
        # keep the sets current at some moment of the last grace period
        while len(self.history) > 1 and self.history[1][0] <= now - self.grace_seconds:
            self.history.pop(0)
        return members

    def may_promise(self, owner_key: str, node: str, now: float) -> bool:
        """True when `node` of `owner_key` is ours now and under every member set of the
        last grace period. A replica whose own Lease is stale promises nothing."""
        members = self._record(now)
        if self.me not in members:
            return False
        if self.history[0][0] > now - self.grace_seconds:
            return False  # we have not watched the members for a whole grace period yet
        return all(owner_of(owner_key, node, ms) == self.me for _, ms in self.history)
