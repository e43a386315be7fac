"""behaviour.md "Image labels": pulls first. The home term and the image-warm term ask for the
node labels that say a node holds the pod's images, so the scheduler judges at bind time."""
from __future__ import annotations

import random
import re

import jsonpatch
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.config import Settings
from homing.engine.cluster.images import MAX_IMAGE_LABELS, image_label, image_label_value, wanted_image_labels
from homing.engine.identity import WorkloadIndex
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import decide

from .helpers import NOW, PREFERRED, normalise, owner, pod, raw_scores

IMAGE = "registry.example.com/ai/train:24.1"
PREFIX = "image.homing.io"
KEY = image_label(IMAGE, PREFIX)
GB = 1_000_000_000
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _node(images: list[tuple[list[str], int]]) -> dict:
    return {"metadata": {"name": "n"}, "status": {"images": [{"names": n, "sizeBytes": s} for n, s in images]}}


@pytest.mark.parametrize("name", [IMAGE, "nginx:latest", "a" * 300, "x/y@sha256:" + "f" * 64, "::://"])
def test_a_label_is_a_valid_kubernetes_label_for_any_image_name(name):
    key = image_label(name, PREFIX)
    prefix, _, label_name = key.partition("/")
    assert prefix == PREFIX and LABEL_NAME.match(label_name) and len(label_name) <= 63
    assert LABEL_NAME.match(image_label_value(name))


@pytest.mark.parametrize("images, wanted", [
    ([], set()),
    ([([IMAGE], 30 * GB)], {IMAGE}),
    ([([IMAGE], GB - 1)], set()),  # under the floor: a pull of seconds, no label
    ([(["nginx:1.25", "docker.io/library/nginx@sha256:" + "a" * 64], 2 * GB)], {"nginx:1.25", "nginx@sha256:" + "a" * 64}),
    ([(["docker.io/library/busybox:1"], 5 * GB), ([IMAGE], "30")], {"busybox:1"}),  # a size that is not a number: none
    ([([" has space"], 9 * GB)], set()),
])
def test_wanted_labels_follow_the_large_images_the_kubelet_reports(images, wanted):
    got = wanted_image_labels(_node(images), PREFIX, GB)
    assert set(got) == {image_label(n, PREFIX) for n in wanted}


def test_wanted_labels_are_bounded_and_keep_the_largest():
    images = [([f"img-{i}:1"], (i + 1) * GB) for i in range(200)]
    got = wanted_image_labels(_node(images), PREFIX, GB)
    assert len(got) == MAX_IMAGE_LABELS
    assert image_label("img-199:1", PREFIX) in got and image_label("img-0:1", PREFIX) not in got


@st.composite
def clusters(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    names = [f"n{i}" for i in range(draw(st.integers(2, 40)))]
    holders = {n for n in names if rng.random() < 0.4}
    home = rng.choice(names)
    siblings = {str(r): rng.choice(names) for r in range(1, draw(st.integers(1, 8)))}
    sick = {n for n in names if rng.random() < 0.1} - {home}
    return names, holders, home, siblings, sick, draw(st.booleans())


@hsettings(max_examples=300, deadline=None)
@given(c=clusters())
def test_pulls_first_a_node_holding_the_image_beats_a_home_that_lost_it(c):
    """Scored as Kubernetes scores the terms against the nodes' labels at bind time: a home
    that holds the image beats every node; a home that lost it ranks below every healthy,
    unclaimed node that holds it, and an unclaimed holder ranks above an unclaimed non-holder."""
    names, holders, home, siblings, sick, sibling_waits = c
    job = owner(kind="Job", uid="job")
    index = MemoryIndex()
    index.record_bind(job, "0", home, (), NOW - 100)
    for r, node in siblings.items():
        index.record_bind(job, r, node, (), NOW - 100)
    if sibling_waits:
        index.pod_seen("sibling-pending", LivePod(job.key, "1", None))
    labels = {n: ({KEY: "train"} if n in holders else {}) for n in names}
    snap = ClusterSnapshot({n: NodeState(n, Health.UNHEALTHY if n in sick else Health.HEALTHY,
                                         images=frozenset({IMAGE}) if n in holders else frozenset(),
                                         image_labels=frozenset(labels[n])) for n in names})
    p = pod(name="job-0", controller=job, annotations={"volcano.sh/task-index": "0"})
    p["spec"]["containers"][0]["image"] = IMAGE
    d = decide(p, index, WorkloadIndex(), snap, Settings(), NOW)
    patched = jsonpatch.apply_patch(p, d.patch(p))
    preferred = (((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(PREFERRED)) or []
    scores = normalise(raw_scores(preferred, labels))
    sibling_homes = set(siblings.values()) - {home}
    healthy = [n for n in names if n not in sick and n != home]
    if home in holders:
        assert all(scores[home] > scores[n] for n in names if n != home), (scores, d.terms)
    elif holders:
        for n in healthy:
            if n in holders and n not in sibling_homes:
                assert scores[n] > scores[home], (n, scores, d.terms)
    for a in healthy:
        for b in healthy:
            # a claimed home (a sibling's) is nobody's image-warm: compared among the unclaimed
            if a in holders and b not in holders and not {a, b} & sibling_homes:
                assert scores[a] > scores[b], (a, b, scores, d.terms)


def _rank_zero_at_home_n0(snap: ClusterSnapshot, settings: Settings | None = None):
    """The decision for rank 0 of a job whose home is n0."""
    job = owner(kind="Job", uid="job")
    index = MemoryIndex()
    index.record_bind(job, "0", "n0", (), NOW - 100)
    p = pod(name="job-0", controller=job, annotations={"volcano.sh/task-index": "0"})
    p["spec"]["containers"][0]["image"] = IMAGE
    return decide(p, index, WorkloadIndex(), snap, settings or Settings(), NOW)


ONE_LABELLED = {"n0": NodeState("n0", Health.HEALTHY), "n1": NodeState("n1", Health.HEALTHY, image_labels=frozenset({KEY}))}


def test_without_labels_anywhere_the_home_term_names_the_home_alone():
    """No node labelled for the image (labels not written, or the image held nowhere): every
    node is as cold as the home, and the home keeps its term."""
    d = _rank_zero_at_home_n0(ClusterSnapshot({n: NodeState(n, Health.HEALTHY) for n in ("n0", "n1")}))
    (home,) = [t for t in d.terms if t.role == "home"]
    assert home.as_k8s()["preference"]["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n0"]}]


def test_the_home_term_asks_for_the_image_once_a_node_is_labelled():
    d = _rank_zero_at_home_n0(ClusterSnapshot(dict(ONE_LABELLED)))
    by_role = {t.role: t.as_k8s()["preference"]["matchExpressions"] for t in d.terms}
    assert by_role["home"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n0"]},
                               {"key": KEY, "operator": "Exists"}]
    assert by_role["image-warm"] == [{"key": KEY, "operator": "Exists"}]


def test_tenant_strict_clusters_keep_host_name_terms():
    """image_warm_namespace_only: the labels are the kubelets' reports of every tenant's images."""
    strict = Settings(preferences={"image_warm_namespace_only": True})
    d = _rank_zero_at_home_n0(ClusterSnapshot(dict(ONE_LABELLED)), strict)
    assert all(t.operator.value != "Exists" and not t.also for t in d.terms)


def test_a_rankless_pod_s_pool_homes_that_lost_the_image_rank_below_a_node_that_holds_it():
    """A Deployment's replicas: the promise goes to a pool home that still holds the image, and
    a pool home that lost it gets no pool preference (it ranks with any other cold node)."""
    svc = owner(kind="Deployment", uid="svc")
    index = MemoryIndex()
    for node in ("p0", "p1", "p2"):
        index.record_bind(svc, None, node, (), NOW - 100 + int(node[1]))
    labels = {"p0": {}, "p1": {KEY: "serve"}, "p2": {}, "x": {KEY: "serve"}, "y": {}}
    snap = ClusterSnapshot({n: NodeState(n, Health.HEALTHY, image_labels=frozenset(labels[n])) for n in labels})
    p = pod(name="svc-abc", controller=svc)
    p["spec"]["containers"][0]["image"] = IMAGE
    d = decide(p, index, WorkloadIndex(), snap, Settings(), NOW)
    assert d.promise == "p1", "the pool home that still holds the image is promised"
    patched = jsonpatch.apply_patch(p, d.patch(p))
    scores = normalise(raw_scores(patched["spec"]["affinity"]["nodeAffinity"][PREFERRED], labels))
    assert scores["p1"] > scores["x"] > max(scores["p0"], scores["p2"], scores["y"]), (scores, d.terms)
