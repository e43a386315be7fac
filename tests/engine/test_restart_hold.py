"""A gang between its pods still claims its homes (issue 44, cause 1; behaviour.md "Claimed
homes"): Volcano restarts a reclaimed gang by deleting every pod and creating them again
10-30 s later. With no pod the gang was not active, claimed nothing, and a gang admitted in
the gap took its homes and their warm images; back, the gang found its homes held and pulled
on cold nodes. Now an owner whose pods were deleted before they ended stays active for
`restart_hold` after the last one went, and one whose pods are terminating is active."""
from __future__ import annotations

import pytest

from homing.engine.identity import WorkloadIndex
from homing.engine.identity.podview import pod_view
from homing.engine.memory import lifecycle
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.lifecycle import DELETED, Policy
from homing.engine.placement.claimed import claimed_homes, claims, others_claims

from .helpers import NOW, bind, owner, pod, snapshot

HOLD = 60.0
NODES = ("g0", "g1", "h0", "h1")
SNAP = snapshot(NODES)
VOLCANO = "batch.volcano.sh/v1alpha1"
GANG = owner(kind="Job", name="train-a", api_version=VOLCANO, uid="hold-gang")
NEXT = owner(kind="Job", name="train-b", api_version=VOLCANO, uid="hold-next")


def observe(index: MemoryIndex, event: str | None, p: dict, now: float) -> None:
    view = pod_view(p, WorkloadIndex(), 1_000_000)
    assert view is not None
    lifecycle.observe(index, event, view, SNAP, now, Policy())


def gang_ran(index: MemoryIndex) -> list[dict]:
    """GANG's ranks 0 and 1 ran on g0 and g1."""
    pods = []
    for r, node in enumerate(("g0", "g1")):
        p = pod(name=f"train-a-{r}", controller=GANG, annotations={"volcano.sh/task-index": str(r)}, uid=f"a{r}")
        p["status"] = {"phase": "Pending"}
        observe(index, "ADDED", p, NOW - 600)
        bind(p, node)["status"]["phase"] = "Running"
        observe(index, "MODIFIED", p, NOW - 599)
        pods.append(p)
    return pods


def others_claimed(index: MemoryIndex, now: float) -> set[str]:
    """What a pod of another gang (NEXT's rank 0, no memory yet) keeps off."""
    return set(claimed_homes(index, NEXT.key, (), None, others_claims(index, NEXT.key, now), 256))


def test_a_gang_deleted_whole_for_a_restart_keeps_its_homes_claimed_through_the_gap():
    index = MemoryIndex(restart_hold=HOLD)
    for p in gang_ran(index):
        observe(index, DELETED, p, NOW)  # reclaimed: the controller deletes every pod
    assert others_claimed(index, NOW + 20) == {"g0", "g1"}, "a gang admitted in the gap keeps off them"
    assert others_claimed(index, NOW + HOLD + 1) == set(), "a gang that never came back lets them go"


def test_a_gang_whose_pods_are_terminating_is_expected_back():
    index = MemoryIndex(restart_hold=HOLD)
    for p in gang_ran(index):
        p["metadata"]["deletionTimestamp"] = "2027-01-15T00:00:00Z"
        observe(index, "MODIFIED", p, NOW)
    assert others_claimed(index, NOW + HOLD + 600) == {"g0", "g1"}, "going, not gone: the hold starts at their deletion"


def test_a_gang_that_came_back_claims_as_any_active_gang():
    index = MemoryIndex(restart_hold=HOLD)
    for p in gang_ran(index):
        observe(index, DELETED, p, NOW)
    back = pod(name="train-a-0", controller=GANG, annotations={"volcano.sh/task-index": "0"}, uid="a0-again")
    back["status"] = {"phase": "Pending"}
    observe(index, "ADDED", back, NOW + 20)
    assert others_claimed(index, NOW + HOLD + 600) == {"g0", "g1"}, "pending pods claim however long they wait"


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_gang_whose_pods_ended_and_stay_listed_is_not_held(phase):
    """A pod that ended says the owner is done with it, not restarting: nothing is held while it is listed."""
    index = MemoryIndex(restart_hold=HOLD)
    for p in gang_ran(index):
        p["status"]["phase"] = phase
        observe(index, "MODIFIED", p, NOW)
    assert others_claimed(index, NOW + 1) == set()


def test_no_hold_without_the_setting():
    index = MemoryIndex()
    for p in gang_ran(index):
        observe(index, DELETED, p, NOW)
    assert set(claims(index, NOW + 1)) == set()


# -- pulls first: a home kept for a gang between its pods yields to a pod it is warm for --------

def admitted_in_the_gap(index: MemoryIndex, image: str):
    """NEXT's rank 0, of `image`, admitted while GANG (image train:1) is between its pods."""
    from homing.config import Settings
    from homing.engine.placement.decide import decide

    p = pod(name="train-b-0", controller=NEXT, annotations={"volcano.sh/task-index": "0"}, uid="b0")
    p["spec"]["containers"][0]["image"] = image
    return decide(p, index, WorkloadIndex(), SNAP, Settings(), NOW + 20)


def kept_off(decision) -> set[str]:
    """The claimed term's nodes (a claimed home is kept off by weight 160; keep-clear's 5 only tips a tie)."""
    return {v for t in decision.terms if t.role == "claimed" for v in t.values}


def warm_term(decision) -> set[str]:
    return {v for t in decision.terms if t.role == "image-warm" for v in t.values}


def test_a_pod_of_the_same_image_admitted_in_the_gap_may_take_the_held_homes():
    """A new job of the gang's image (the gang deleted for good, or a sibling job) starts where the
    image is: the hold keeps the homes from pods that would pull there, not from one that would not."""
    index = MemoryIndex(restart_hold=HOLD)
    for p in gang_ran(index):
        observe(index, DELETED, p, NOW)
    same = admitted_in_the_gap(index, "train:1")
    assert not {"g0", "g1"} & kept_off(same) and {"g0", "g1"} <= warm_term(same)
    other = admitted_in_the_gap(index, "serve:2")
    assert {"g0", "g1"} <= kept_off(other), "a pod of another image still keeps off them"


def test_a_gang_with_a_pod_left_keeps_its_homes_from_a_pod_of_its_image_too():
    """Only the hold yields: a gang with a pod pending is coming back, its claim holds for anyone."""
    index = MemoryIndex(restart_hold=HOLD)
    pods = gang_ran(index)
    observe(index, DELETED, pods[0], NOW)
    back = pod(name="train-a-0", controller=GANG, annotations={"volcano.sh/task-index": "0"}, uid="a0-again")
    back["status"] = {"phase": "Pending"}
    observe(index, "ADDED", back, NOW + 1)
    assert "g0" in kept_off(admitted_in_the_gap(index, "train:1"))
