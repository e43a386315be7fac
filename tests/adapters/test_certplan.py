"""When the webhook's certificates rotate (certplan.py): renewal at two thirds of a life,
a new CA added before any leaf it signs is served, and dropped only after the replicas
had time to load the new leaf."""
from __future__ import annotations

import pytest

from homing.kube.certs.certplan import Kept, Lifetime, Policy, Step, plan

POLICY = Policy(propagation_seconds=5, reload_seconds=20)
CA = Lifetime(issued=0, expires=3000)  # renew at 2000
NEW_CA = Lifetime(issued=2000, expires=5000)
LEAF = Lifetime(issued=0, expires=300)  # renew at 200


def kept(leaf=LEAF, hosts=True, by_newest=True, cas=(CA,), key=True) -> Kept:
    return Kept(leaf, hosts, by_newest, tuple(cas), key)


@pytest.mark.parametrize(
    "facts, now, step",
    [
        (kept(), 100, Step.NONE),
        (kept(), 200, Step.NEW_LEAF),  # two thirds of the leaf's life
        (kept(leaf=None), 100, Step.REISSUE),
        (kept(hosts=False), 100, Step.REISSUE),  # the Service was renamed
        (kept(key=False), 100, Step.REISSUE),  # cannot sign a new leaf
        (kept(), 300, Step.REISSUE),  # expired: nothing to keep serving
        (kept(cas=()), 100, Step.REISSUE),
        (kept(leaf=Lifetime(1900, 2200)), 2000, Step.NEW_CA),  # the CA's turn, before the leaf's
        # a new CA in the bundle, the leaf still the old CA's: wait for the bundle to propagate
        (kept(leaf=Lifetime(1900, 2200), by_newest=False, cas=(NEW_CA, CA)), 2004, Step.NONE),
        (kept(leaf=Lifetime(1900, 2200), by_newest=False, cas=(NEW_CA, CA)), 2005, Step.NEW_LEAF),
        # the new leaf is served; the old CA goes once every replica had time to load it
        (kept(leaf=Lifetime(2005, 2305), cas=(NEW_CA, CA)), 2024, Step.NONE),
        (kept(leaf=Lifetime(2005, 2305), cas=(NEW_CA, CA)), 2025, Step.TRIM),
    ],
)
def test_plan(facts, now, step):
    assert plan(facts, now, POLICY) is step


def test_a_whole_ca_rotation_never_serves_a_leaf_outside_the_bundle():
    """Walk time forward applying each step: at every moment the leaf in use was signed
    by a CA that had been in the bundle for the propagation time."""
    cas = [("ca0", Lifetime(0, 600))]  # (name, life), newest first
    leaf_by, leaf = "ca0", Lifetime(0, 60)
    added = {"ca0": -100.0}
    seen_rotation = False
    for now in range(0, 2000):
        facts = Kept(leaf, True, leaf_by == cas[0][0], tuple(life for _, life in cas), True)
        step = plan(facts, now, POLICY)
        assert step is not Step.REISSUE, now
        if step is Step.NEW_CA:
            name = f"ca{len(added)}"
            cas.insert(0, (name, Lifetime(now, now + 600)))
            added[name] = now
            seen_rotation = True
        elif step is Step.NEW_LEAF:
            leaf_by, leaf = cas[0][0], Lifetime(now, now + 60)
        elif step is Step.TRIM:
            cas = cas[:1]
        assert leaf_by in [n for n, _ in cas]
        assert now - added[leaf_by] >= POLICY.propagation_seconds or leaf_by == "ca0"
        assert now < leaf.expires
    assert seen_rotation
