"""When to rotate the webhook's certificates (behaviour.md "Operation": short-lived, renewed while running,
before expiry), decided from plain facts about the kept certificates; tls.py does the
cryptography and certstore.py the I/O.

cert-manager's shape: a CA (default 1 year) signs a short serving certificate (default
7 days); each is renewed once two thirds of its life have passed. A new CA is first only
*added* to the caBundle (the old one stays: replicas still serve leaves it signed), the
leaf it signs is issued only after the bundle had time to reach the API server, and an
old CA leaves the bundle only after every replica has had time to load the new leaf. So
at every moment the leaf any replica serves is signed by a CA in the bundle."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

RENEW_AT = 2 / 3  # of a certificate's life


class Step(str, Enum):
    NONE = "none"
    REISSUE = "reissue"  # nothing usable kept: a new CA and leaf (old valid CAs stay in the bundle)
    NEW_CA = "new-ca"  # add a new CA to the bundle, keep serving the current leaf
    NEW_LEAF = "new-leaf"  # a new leaf signed by the newest CA
    TRIM = "trim"  # drop CAs no replica can still be serving a leaf of


@dataclass(frozen=True)
class Lifetime:
    issued: float  # epoch seconds
    expires: float

    def due(self, now: float) -> bool:
        return now >= self.issued + RENEW_AT * (self.expires - self.issued)


@dataclass(frozen=True)
class Kept:
    """What the kept files say; None fields: missing or unreadable."""

    leaf: Lifetime | None
    leaf_hosts_ok: bool
    leaf_by_newest_ca: bool
    cas: tuple[Lifetime, ...]  # the bundle, newest first
    newest_ca_key: bool  # the key of the newest CA is kept and matches it


@dataclass(frozen=True)
class Policy:
    propagation_seconds: float  # a new caBundle reaches the API server within this
    reload_seconds: float  # every replica loads a new leaf within this


def plan(kept: Kept, now: float, policy: Policy) -> Step:
    usable = kept.leaf is not None and kept.leaf_hosts_ok and now < kept.leaf.expires
    if not usable or not kept.cas or not kept.newest_ca_key or now >= kept.cas[0].expires:
        return Step.REISSUE
    newest, leaf = kept.cas[0], kept.leaf
    assert leaf is not None
    if newest.due(now) and kept.leaf_by_newest_ca:
        return Step.NEW_CA
    if leaf.due(now) or not kept.leaf_by_newest_ca:
        # a leaf of a brand-new CA waits until the bundle naming that CA is in effect
        return Step.NEW_LEAF if now >= newest.issued + policy.propagation_seconds else Step.NONE
    if len(kept.cas) > 1 and now >= leaf.issued + policy.reload_seconds:
        return Step.TRIM
    return Step.NONE
