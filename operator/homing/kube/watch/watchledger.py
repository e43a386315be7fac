"""What one watched kind has handed to the engine, object by object, and at which
resourceVersion. kopf's watch delivers events; the periodic re-list (watches.py) delivers
only what the watch missed, hands over as deleted what it no longer lists, never brings
back what the watch deleted while the listing ran, and tells whether the watch has stopped
delivering: a change the listing shows, the watch never sent, and no event since
(behaviour.md "Operation"). Plain data in, plain answers out: no I/O, no clock of its own."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Tombstone = dict[str, Any]  # what a DELETED hand-over carries: the object's identity, not its body


def newer(version: str, than: str | None) -> bool:
    """Whether `version` comes after `than`. The API server's versions are etcd revisions
    (ordered integers); anything else only tells "different"."""
    if than is None:
        return True
    if version.isdigit() and than.isdigit():
        return int(version) > int(than)
    return version != than


def identity(obj: dict[str, Any]) -> Tombstone:
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid") if k in meta}}


@dataclass
class Ledger:
    tombstone: Callable[[dict[str, Any]], Tombstone] | None = identity  # None: the caller forgets by uid (pods)
    applied: dict[str, tuple[str, Tombstone | None]] = field(default_factory=dict)  # uid -> (version, tombstone)
    watch_events: int = 0
    behind_since: float | None = None  # a listing found a change the watch had not sent, and none came since
    missed: int = 0  # changes the listings had to hand over themselves, in all
    phantoms: int = 0  # deletions they had to hand over (normal after kopf's own re-list, which sends none)
    _touched: set[str] | None = None  # uids the watch spoke of since the listing began (None: no listing)
    _deleted: set[str] = field(default_factory=set)  # ... and of those, the ones it deleted
    _counting: bool = False  # this listing judges the watch (not the start-up one, before any watch)
    _events_at_miss: int | None = None  # the watch's event count when this listing found its first miss

    def from_watch(self, event: str | None, obj: dict[str, Any]) -> bool:
        """A watch event; True when the engine should see it (not a repeat of what it has)."""
        self.watch_events += 1
        self.behind_since = None  # the watch is delivering
        uid, version = _uid_version(obj)
        if not uid:
            return False
        if self._touched is not None:
            self._touched.add(uid)
        if event == "DELETED":
            if self._touched is not None:
                self._deleted.add(uid)
            self.applied.pop(uid, None)
            return True  # a deletion is never a repeat: the engine forgets what it may still hold
        known = self.applied.get(uid)
        if known is not None and not newer(version, known[0]):
            return False
        self.applied[uid] = (version, self._stone(obj))
        return True

    def begin_listing(self, counting: bool = True) -> None:
        self._touched, self._deleted = set(), set()
        self._counting, self._events_at_miss = counting, None

    def from_listing(self, obj: dict[str, Any]) -> bool:
        """A listed object; True when it is news to the engine (the watch missed it)."""
        uid, version = _uid_version(obj)
        if not uid or uid in self._deleted:
            return False  # deleted by the watch after the listing's snapshot: it stays deleted
        known = self.applied.get(uid)
        if known is not None:
            if not newer(version, known[0]):
                return False
            if self._touched and uid in self._touched and not _ordered(version, known[0]):
                return False  # the watch spoke of it meanwhile, and which is later cannot be told
        self.applied[uid] = (version, self._stone(obj))
        if self._counting:
            self.missed += 1
            if self._events_at_miss is None:
                self._events_at_miss = self.watch_events
        return True

    def abandon_listing(self) -> None:
        """A listing cut short: nothing is concluded from it."""
        self._touched, self._deleted, self._counting = None, set(), False

    def end_listing(self, listed: set[str], now: float, version: str = "") -> list[Tombstone | None]:
        """The objects deleted while the watch was away: known, not listed, and not heard of
        from the watch later than the listing's snapshot (`version`; when the versions do not
        order, heard of at all since the listing began). They are forgotten here; the caller
        hands them over as DELETED. A change the watch missed, with no event from it since,
        marks it behind."""
        touched = self._touched or set()

        def after_snapshot(uid: str) -> bool:
            held = self.applied[uid][0]
            return uid in touched and (not _ordered(held, version) or newer(held, version))

        gone = [uid for uid in self.applied if uid not in listed and not after_snapshot(uid)]
        stones = [self.applied.pop(uid)[1] for uid in gone]
        if self._counting:
            self.phantoms += len(gone)
            if self._events_at_miss == self.watch_events and self.behind_since is None:
                self.behind_since = now
        self._touched, self._deleted, self._counting = None, set(), False
        return stones

    def _stone(self, obj: dict[str, Any]) -> Tombstone | None:
        return self.tombstone(obj) if self.tombstone is not None else None

    def behind_for(self, now: float) -> float:
        """Seconds since a listing found what the watch had not sent, with no event since."""
        return 0.0 if self.behind_since is None else now - self.behind_since


def _ordered(a: str, b: str) -> bool:
    return a.isdigit() and b.isdigit()


def _uid_version(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
