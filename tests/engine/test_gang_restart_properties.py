"""A gang restart scored the way the shipped schedulers score it: node affinity normalised
over the candidate nodes times its weight, plus image locality unnormalised (up to 100 on
every node holding the image) and the resource-balancing scores within their spread
(engine/placement/scheduler_scores.py). The scheduler places the gang's pods one by one in any order,
each on its best-scoring free node, ties broken against homing (a claimed home first).

What must hold: when k of the n homes are held by other pods, every one of the n - k ranks
whose home is free goes home, and no rank is placed on a claimed home (another rank's free
home) while a node that is nobody's claimed home is free. Before claimed homes, a rank whose
home was held took a sibling's warm home and the sibling moved too."""
from __future__ import annotations

import random

import jsonpatch
import pytest
from hypothesis import event, given, settings as hsettings, strategies as st

from homing.config import Preferences, Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import decide
from homing.engine.placement.scheduler_scores import RESOURCE_SPREAD, SHIPPED, SchedulerProfile

from .helpers import NOW, PREFERRED, normalise, npu_pod, owner, raw_scores

IMAGE = "registry.example.com/ai/train:24.1"


@st.composite
def restarts(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(2, 12))
    homes = [f"home-{i}" for i in range(n)]
    held = set(rng.sample(homes, draw(st.integers(0, n))))  # taken by other workloads' pods
    cold = [f"cold-{i}" for i in range(draw(st.integers(0, 8)))]  # free, without the image
    warm = [f"warm-{i}" for i in range(draw(st.integers(0, 4)))]  # free, holding the image, nobody's home
    nodes = homes + cold + warm
    resources = {node: rng.randint(0, RESOURCE_SPREAD) for node in nodes}  # each plugin's own draw, within the spread
    order = rng.sample(range(n), n)  # the scheduler's order over the gang's tasks
    profile = draw(st.sampled_from(SHIPPED))
    return homes, held, cold, warm, resources, order, profile


def _terms(n: int, homes: list[str], nodes: list[str], images: set[str], settings: Settings) -> dict[int, list[dict]]:
    """Every rank's preferred terms, decided as the gang's pods are created (before any binds)."""
    job = owner(kind="Job", name="llama", api_version="batch.volcano.sh/v1alpha1", uid="gang")
    index = MemoryIndex()
    for r, node in enumerate(homes):
        index.record_bind(job, f"worker/{r}", node, (), NOW - 600)
    snap = ClusterSnapshot({node: NodeState(node, Health.HEALTHY, images=frozenset({IMAGE}) if node in images else frozenset())
                            for node in nodes})
    out = {}
    for r in range(n):
        p = npu_pod(name=f"llama-worker-{r}", controller=job,
                    annotations={"volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(r)})
        p["spec"]["containers"][0]["image"] = IMAGE
        d = decide(p, index, WorkloadIndex(), snap, settings, NOW)
        patched = jsonpatch.apply_patch(p, d.patch(p))
        out[r] = ((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(PREFERRED) or []
        index.pod_seen(f"uid-{r}", LivePod(job.key, f"worker/{r}", None))  # created, pending
    return out


def whole_scores(preferred: list[dict], free: list[str], images: set[str], resources: dict[str, int],
                 profile: SchedulerProfile) -> dict[str, int]:
    affinity = normalise(raw_scores(preferred, {n: {} for n in free}))  # over the candidate nodes only
    return {n: profile.node_affinity * affinity[n] + profile.image_locality * (100 if n in images else 0)
            + resources[n] * profile.resource_plugins for n in free}


def place_gang(homes, held, cold, warm, resources, order, profile, settings):
    nodes = homes + cold + warm
    images = set(homes) | set(warm)
    terms = _terms(len(homes), homes, nodes, images, settings)
    free = [n for n in nodes if n not in held]
    placed: dict[int, str] = {}
    for r in order:
        if not free:
            break
        scores = whole_scores(terms[r], free, images, resources, profile)
        claimed = {homes[s] for s in range(len(homes)) if s != r and s not in placed}
        # ties go against homing: a claimed home first, then a cold node
        node = max(free, key=lambda n: (scores[n], n in claimed, n.startswith("cold")))
        placed[r] = node
        free.remove(node)
    return placed


@hsettings(max_examples=400, deadline=None)
@given(case=restarts())
def test_a_gang_restart_sends_every_free_home_home_and_takes_no_claimed_home(case):
    homes, held, cold, warm, resources, order, profile = case
    fits = len(cold) + len(warm) >= len(held)  # a gang binds whole or not at all
    event(f"{len(held)} of {len(homes)} homes held; gang fits: {fits}; {profile.name}")
    if not fits:
        return
    placed = place_gang(homes, held, cold, warm, resources, order, profile, Settings())
    assert len(placed) == len(homes)
    for r, node in placed.items():
        if homes[r] in held:
            assert node not in homes, (r, node, placed)  # never a sibling's home: an unclaimed node was free
        else:
            assert node == homes[r], (r, node, placed)


@pytest.mark.parametrize("profile", SHIPPED, ids=[p.name.split()[0] for p in SHIPPED])
def test_without_claimed_homes_a_held_home_cascades(profile):
    """The defect, kept to show the model can fail: with the claimed preference
    off, a rank whose home is held takes a sibling's warm home over a cold node."""
    homes = [f"home-{i}" for i in range(4)]
    settings = Settings(preferences=Preferences(claimed_homes=False))
    placed = place_gang(homes, {"home-0"}, ["cold-0", "cold-1"], [], {n: 0 for n in homes + ["cold-0", "cold-1"]},
                        [0, 1, 2, 3], profile, settings)
    assert placed[0] in homes[1:], placed
    assert sum(placed[r] == homes[r] for r in range(1, 4)) < 3, placed
    with_claims = place_gang(homes, {"home-0"}, ["cold-0", "cold-1"], [], {n: 0 for n in homes + ["cold-0", "cold-1"]},
                             [0, 1, 2, 3], profile, Settings())
    assert with_claims[0].startswith("cold")
    assert all(with_claims[r] == homes[r] for r in range(1, 4)), with_claims
