"""behaviour.md "Beyond the home" beyond home: image references, where images are, vacant homes, and the terms
the strategies build from them. Table-driven; no cluster."""
from __future__ import annotations

import json

import pytest

from homing.config import Preferences, Settings
from homing.engine.cluster.images import node_images, normalise, pod_images
from homing.engine.identity import WorkloadIndex
from homing.engine.identity.podview import pod_view
from homing.engine.memory import lifecycle
from homing.engine.memory.index import MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import decide

from .helpers import NOW, bind, owner, pod

SETTINGS = Settings()
IMAGE = "registry.example.com/ai/train:24.1"


@pytest.mark.parametrize(
    "ref, normal",
    [
        pytest.param("nginx", "nginx:latest", id="hub-short-no-tag"),
        pytest.param("nginx:1.25", "nginx:1.25", id="hub-short"),
        pytest.param("library/nginx:1.25", "nginx:1.25", id="hub-library"),
        pytest.param("docker.io/library/nginx:1.25", "nginx:1.25", id="hub-full"),
        pytest.param("docker.io/team/app:2", "team/app:2", id="hub-org"),
        pytest.param("registry.example.com:5000/ai/train", "registry.example.com:5000/ai/train:latest",
                     id="port-is-not-a-tag"),
        pytest.param("repo@sha256:abc", "repo@sha256:abc", id="digest"),
        pytest.param(IMAGE, IMAGE, id="private"),
        pytest.param("", "", id="empty"),
        pytest.param("bad ref", "", id="space"),
    ],
)
def test_normalise(ref, normal):
    assert normalise(ref) == normal


def test_pod_images_main_containers_once_each():
    p = pod()
    p["spec"]["containers"] = [{"name": "a", "image": "docker.io/library/nginx:1.25"}, {"name": "b", "image": "nginx:1.25"},
                               {"name": "c"}, "junk", {"name": "d", "image": 7}]
    p["spec"]["initContainers"] = [{"name": "i", "image": "busybox"}]
    assert pod_images(p) == ("nginx:1.25",)
    assert pod_images({"spec": {"containers": "nonsense"}}) == ()


def test_node_images_reads_every_name_and_survives_junk():
    node = {"status": {"images": [{"names": ["docker.io/library/nginx@sha256:1", "docker.io/library/nginx:1.25"],
                                   "sizeBytes": 1}, {"names": None}, "junk", {"names": [3, IMAGE]}]}}
    assert node_images(node) == {"nginx@sha256:1", "nginx:1.25", IMAGE}
    assert node_images({"status": {"images": "x"}}) == frozenset()


def test_snapshot_tracks_image_holders_through_put_and_remove():
    snap = ClusterSnapshot({"n1": NodeState("n1", Health.HEALTHY, images=frozenset({IMAGE}))})
    assert snap.image_nodes == {IMAGE: {"n1"}}
    snap.put(NodeState("n1", Health.HEALTHY, images=frozenset()))
    assert snap.image_nodes == {}
    snap.put(NodeState("n2", Health.HEALTHY, images=frozenset({IMAGE})))
    snap.remove("n2")
    assert snap.image_nodes == {}


# -- the index: where images ran, vacant homes ----------------------------------------------------

def test_warm_nodes_need_every_image_most_recent_first():
    index = MemoryIndex()
    index.ran_images(("a", "b"), "n1", NOW)
    index.ran_images(("a",), "n2", NOW + 1)
    index.ran_images(("a", "b"), "n3", NOW + 2)
    assert index.warm_nodes(("a", "b")) == ["n3", "n1"]
    assert index.warm_nodes(("a",)) == ["n3", "n2", "n1"]
    assert index.warm_nodes(()) == []


def test_vacant_homes_most_recent_first_and_only_while_still_a_home():
    index = MemoryIndex()
    a, b = owner(uid="va"), owner(uid="vb")
    index.record_bind(a, "0", "n1", (), NOW)
    index.record_bind(b, "0", "n2", (), NOW)
    index.vacate("n1", a.key, NOW + 1)
    index.vacate("n2", b.key, NOW + 2)
    assert list(index.vacant_homes()) == ["n2", "n1"]
    assert list(index.vacant_homes(skip_owner=b.key)) == ["n1"]
    index.record_bind(b, "0", "n9", (), NOW + 3)  # b's rank moved: n2 is nobody's home now
    assert list(index.vacant_homes()) == ["n1"]
    assert index.vacant_by_owner == {a.key: {"n1"}}, "a home given up is no vacancy to step over"
    index.reoccupy("n1", a.key)
    assert list(index.vacant_homes()) == []
    assert index.vacant == {} and index.vacated_order == {} and index.vacant_by_owner == {}
    index.vacate("n1", a.key, NOW + 4)
    index.forget(a.key)  # an owner forgotten takes its vacancies with it
    assert index.vacant == {} and index.vacated_order == {} and index.vacant_by_owner == {}


def test_old_vacancies_are_dropped():
    index = MemoryIndex()
    a = owner(uid="old")
    index.record_bind(a, "0", "n1", (), NOW)
    index.vacate("n1", a.key, NOW)
    index.drop_old_vacancies(NOW + 10, 100)
    assert list(index.vacant_homes()) == ["n1"]
    index.drop_old_vacancies(NOW + 100, 100)
    assert list(index.vacant_homes()) == []


# -- the lifecycle feeds both -----------------------------------------------------------------------

def _event(index, event, uid, node, phase="Running", ref=None, deleting=False):
    p = pod(name=f"w-{uid}", controller=ref, annotations={"volcano.sh/task-index": "0"}, node_name=node, uid=uid)
    p["spec"]["containers"][0]["image"] = IMAGE
    p["status"] = {"phase": phase}
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    snap = ClusterSnapshot({n: NodeState(n, Health.HEALTHY) for n in ("n1", "n2")})
    lifecycle.observe(index, event, pod_view(p, WorkloadIndex(), 10**6), snap, NOW, lifecycle.Policy())


def test_a_home_left_is_vacant_until_its_owner_comes_back_and_images_are_remembered():
    index, job = MemoryIndex(), owner(kind="Job", uid="lj")
    _event(index, "ADDED", "p1", "n1", ref=job)
    assert index.warm_nodes((IMAGE,), "ns") == ["n1"] and index.warm_nodes((IMAGE,), "other") == []
    _event(index, "MODIFIED", "p1", "n1", ref=job, deleting=True)
    assert list(index.vacant_homes()) == ["n1"], "vacant as soon as its pod is going"
    _event(index, "DELETED", "p1", "n1", ref=job, deleting=True)
    assert list(index.vacant_homes()) == ["n1"]
    _event(index, "ADDED", "p2", "n1", ref=job)
    assert list(index.vacant_homes()) == []


# -- decisions -----------------------------------------------------------------------------------------

def _cluster():
    nodes = {f"n{i}": NodeState(f"n{i}", Health.HEALTHY, images=frozenset({IMAGE}) if i in (3, 4) else frozenset())
             for i in range(6)}
    nodes["n5"] = NodeState("n5", Health.UNHEALTHY, images=frozenset({IMAGE}))
    return ClusterSnapshot(nodes)


def _ranked_pod(ref, rank="0"):
    p = pod(name=f"w-{rank}", controller=ref, annotations={"volcano.sh/task-index": rank})
    p["spec"]["containers"][0]["image"] = IMAGE
    return p


@pytest.mark.parametrize(
    "preferences, roles",
    [
        pytest.param(Preferences(), {"image-warm": ("n2", "n3", "n4"), "keep-clear": ("n1",)}, id="both"),
        pytest.param(Preferences(image_warm=False), {"keep-clear": ("n1",)}, id="no-image-warm"),
        pytest.param(Preferences(vacant_homes=False), {"image-warm": ("n2", "n3", "n4")}, id="no-vacant-homes"),
        pytest.param(Preferences(image_warm=False, vacant_homes=False), {}, id="neither"),
    ],
)
def test_a_first_placement_prefers_warm_nodes_and_keeps_clear_of_vacant_homes(preferences, roles):
    index, job, other = MemoryIndex(), owner(kind="Job", uid="fj"), owner(kind="Job", uid="other")
    index.record_bind(other, "0", "n1", (), NOW)
    index.vacate("n1", other.key, NOW)
    index.ran_images((IMAGE,), "n2", NOW, "ns")  # homing saw it run there; the kubelet reports n3, n4 (n5 unhealthy)
    index.ran_images((IMAGE,), "n0", NOW, "tenant-b")  # another namespace's run: not this pod's to know
    settings = Settings(preferences=preferences)
    d = decide(_ranked_pod(job), index, WorkloadIndex(), _cluster(), settings, NOW)
    assert {t.role: t.values for t in d.terms} == roles
    w = settings.weights
    assert all(t.weight == {"image-warm": w.image_warm, "keep-clear": w.keep_clear}[t.role] for t in d.terms)


def test_a_rank_never_prefers_a_warm_node_it_failed_on_nor_avoids_its_own_home():
    index, job = MemoryIndex(), owner(kind="Job", uid="rj")
    index.record_bind(job, "0", "n3", (), NOW - 100)
    index.record_fault(job.key, "0", "n4", NOW - 10, 3600)
    index.vacate("n3", job.key, NOW - 5)
    d = decide(_ranked_pod(job), index, WorkloadIndex(), _cluster(), SETTINGS, NOW)
    terms = {t.role: t.values for t in d.terms}
    assert terms["home"] == ("n3",)
    assert "n4" not in terms["image-warm"] and terms["avoid"] == ("n4",)
    assert "keep-clear" not in terms, "its own vacant home is its home, not a node to keep clear of"


def test_rankless_pods_beyond_their_pool_prefer_warm_nodes_but_not_other_owners_vacant_homes():
    index, deploy, other = MemoryIndex(), owner(kind="Deployment", uid="dp"), owner(kind="Job", uid="oj")
    index.record_bind(deploy, None, "n0", (), NOW)
    index.vacate("n0", deploy.key, NOW)
    index.record_bind(other, "0", "n1", (), NOW)
    index.vacate("n1", other.key, NOW)
    p = pod(name="infer-x", controller=deploy)
    p["spec"]["containers"][0]["image"] = IMAGE
    d = decide(p, index, WorkloadIndex(), _cluster(), SETTINGS, NOW)
    terms = {t.role: t.values for t in d.terms}
    assert terms == {"home": ("n0",), "image-warm": ("n3", "n4"), "keep-clear": ("n1",)}


def test_term_lists_stay_bounded():
    index, job = MemoryIndex(), owner(kind="Job", uid="bj")
    nodes = {f"w{i:03}": NodeState(f"w{i:03}", Health.HEALTHY, images=frozenset({IMAGE})) for i in range(50)}
    for i in range(50):
        ref = owner(kind="Job", uid=f"o{i}")
        index.record_bind(ref, "0", f"w{i:03}", (), NOW)
        index.vacate(f"w{i:03}", ref.key, NOW + i)
    settings = Settings(bounds={"max_term_values": 7})
    d = decide(_ranked_pod(job), index, WorkloadIndex(), ClusterSnapshot(nodes), settings, NOW)
    terms = {t.role: t.values for t in d.terms}
    assert len(terms["image-warm"]) == 7 and len(terms["keep-clear"]) == 7 and d.truncated
    assert set(terms["keep-clear"]) == {f"w{i:03}" for i in range(43, 50)}, "most recently vacated first"


def test_the_decision_annotation_says_which_preferences_made_terms():
    index, job, other = MemoryIndex(), owner(kind="Job", uid="aj"), owner(kind="Job", uid="ao")
    index.record_bind(other, "0", "n1", (), NOW)
    index.vacate("n1", other.key, NOW)
    d = decide(_ranked_pod(job), index, WorkloadIndex(), _cluster(), SETTINGS, NOW)
    assert d.prefer == ["image-warm", "vacant-homes"]
    assert '"prefer":["image-warm","vacant-homes"]' in d.annotations()["homing.io/decision"]
    bare = decide(_ranked_pod(owner(kind="Job", uid="bare")), MemoryIndex(), WorkloadIndex(),
                  ClusterSnapshot({"n0": NodeState("n0", Health.HEALTHY)}), SETTINGS, NOW)
    assert bare.prefer == [] and "prefer" not in bare.annotations()["homing.io/decision"]


@pytest.mark.parametrize(
    "node, prefer, effect",
    [
        pytest.param("n3", ["image-warm"], lifecycle.PlacedWarm("n3"), id="warm-node"),
        pytest.param("n0", ["image-warm"], None, id="cold-node"),
        pytest.param("n3", [], None, id="not-steered-by-image-warm"),
    ],
)
def test_a_pod_without_home_steered_to_a_warm_node_is_reported(node, prefer, effect):
    index, job = MemoryIndex(), owner(kind="Job", uid="pw")
    p = _ranked_pod(job)
    p["metadata"]["uid"] = "pw-0"
    p["metadata"]["annotations"]["homing.io/decision"] = json.dumps({"prefer": prefer})
    bind(p, node)
    effects = lifecycle.observe(index, "ADDED", pod_view(p, WorkloadIndex(), 10**6), _cluster(), NOW, lifecycle.Policy())
    assert [e for e in effects if isinstance(e, lifecycle.PlacedWarm)] == ([effect] if effect else [])


def test_a_pod_sent_home_that_landed_elsewhere_says_whether_the_node_was_warm():
    index, job = MemoryIndex(), owner(kind="Job", uid="hw")
    p = _ranked_pod(job)
    p["metadata"]["uid"] = "hw-0"
    p["metadata"]["annotations"]["homing.io/home"] = "n0"
    bind(p, "n4")
    effects = lifecycle.observe(index, "ADDED", pod_view(p, WorkloadIndex(), 10**6), _cluster(), NOW, lifecycle.Policy())
    placed = [e for e in effects if isinstance(e, lifecycle.Placed)]
    assert [(e.node, e.outcome.result, e.image_warm) for e in placed] == [("n4", "elsewhere", True)]


def test_topology_sources_carry_node_images_into_the_snapshot():
    from homing.engine.cluster.topology.sources import TopologySources

    src = TopologySources(SETTINGS)
    node = {"metadata": {"name": "n1", "labels": {}}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "images": [{"names": [f"docker.io/library/{IMAGE}"]}, {"names": ["docker.io/library/nginx:1.25"]}]}}
    src.node_changed(node)
    assert src.snapshot.image_nodes == {IMAGE: {"n1"}, "nginx:1.25": {"n1"}}
    node["status"]["images"] = []
    src.node_changed(node)
    assert src.snapshot.image_nodes == {}
