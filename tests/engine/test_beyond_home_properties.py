"""The extended order as a property: score random clusters the way Kubernetes scores
preferred node affinity and check that, below the home and above a fault, nodes rank
image-warm and nobody's vacant home > image-warm, an unclaimed vacant home > cold and
nobody's vacant home > cold, an unclaimed vacant home > a claimed home (a sibling's, or
that of another workload still waiting for its pods)."""
from __future__ import annotations

import random

import jsonpatch
from hypothesis import given, settings as hsettings, strategies as st

from homing.config import Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import decide

from .helpers import NOW, PREFERRED, k8s_scores, owner, pod

IMAGE = "registry.example.com/ai/train:24.1"
SETTINGS = Settings()


@st.composite
def clusters(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    names = [f"n{i}" for i in range(draw(st.integers(2, 60)))]
    holders = {n for n in names if rng.random() < 0.3}
    ran_on = {n for n in names if rng.random() < 0.15}
    ranks = {str(r): rng.choice(names) for r in range(draw(st.integers(0, 12)))}
    vacant = {n for n in names if rng.random() < 0.25}
    faults = {n for n in names if rng.random() < 0.08}
    rankless = draw(st.booleans())
    stranger_waits = draw(st.booleans())  # the other workload has a pod pending: its vacant homes are claimed
    return names, holders, ran_on, ranks, vacant, faults, rankless, stranger_waits


@hsettings(max_examples=300, deadline=None)
@given(c=clusters())
def test_beyond_home_order_holds(c):
    names, holders, ran_on, ranks, vacant, faults, rankless, stranger_waits = c
    job, stranger = owner(kind="Job", uid="job"), owner(kind="Job", uid="stranger")
    index = MemoryIndex()
    for r, node in ranks.items():
        index.record_bind(job, r, node, (), NOW - 100)
    for node in vacant:
        index.record_bind(stranger, f"s/{node[1:]}", node, (), NOW - 50)
        index.vacate(node, stranger.key, NOW - 50)
    if stranger_waits:
        index.pod_seen("stranger-pending", LivePod(stranger.key, "s/0", None))
    index.ran_images((IMAGE,), "placeholder", NOW - 60, "ns")
    for node in ran_on:
        index.ran_images((IMAGE,), node, NOW - 40, "ns")
    picked = "0"
    if not rankless and picked in ranks:
        for node in faults:
            index.record_fault(job.key, picked, node, NOW - 10, 3600)
    snap = ClusterSnapshot({n: NodeState(n, Health.HEALTHY, images=frozenset({IMAGE}) if n in holders else frozenset())
                            for n in names})
    annotations = {} if rankless else {"volcano.sh/task-index": picked}
    p = pod(name="job-x", controller=job, annotations=annotations)
    p["spec"]["containers"][0]["image"] = IMAGE
    d = decide(p, index, WorkloadIndex(), snap, SETTINGS, NOW)
    patched = jsonpatch.apply_patch(p, d.patch(p))
    preferred = (((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(PREFERRED)) or []
    scores = k8s_scores(preferred, names)

    home = None if rankless else ranks.get(picked)
    active_faults = set() if rankless or picked not in ranks else faults
    siblings = set() if rankless else {n for r, n in ranks.items() if r != picked} - {home}
    others = [n for n in names if n != home and n not in active_faults]
    if rankless:  # the job's own remembered nodes are not a pool: ranked pods made them
        siblings = set()

    claimed = siblings | (vacant if stranger_waits else set())  # no pod of the job holds a home: all claimed

    def rank_of(n: str) -> int:
        if n in claimed:
            return 4
        warm = n in holders or n in ran_on
        clear = n not in vacant
        return {(True, True): 0, (True, False): 1, (False, True): 2, (False, False): 3}[(warm, clear)]

    for a in others:
        for b in others:
            if rank_of(a) < rank_of(b):
                assert scores[a] > scores[b], (a, rank_of(a), scores[a], b, rank_of(b), scores[b], d.terms)
    if home is not None and home not in active_faults:
        assert all(scores[home] > scores[n] for n in names if n != home)
    for f in active_faults:
        assert all(scores[f] < scores[n] for n in others)
