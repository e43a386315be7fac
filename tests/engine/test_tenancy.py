"""Tenancy (docs/behaviour.md "Identity", "Tenants"): a pod's identity never leaves its
namespace; a pod holds the node it names only once a scheduler bound it there or it ran
there; and one namespace's claims, vacant homes and workloads steer another namespace's
pods only where tenants share nodes (`tenancy.shared_nodes`). Tables and properties; no cluster."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from homing.config import Settings
from homing.engine.identity import WorkloadIndex, resolve_owner
from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND
from homing.engine.identity.podview import pod_view
from homing.engine.memory import lifecycle
from homing.engine.memory.index import LivePod, MemoryIndex
from homing.engine.memory.tenancy import seen_from
from homing.engine.model import ClusterSnapshot, Health, NodeState, OwnerRef
from homing.engine.placement.beyond_home import every_victim, eviction_victims, vacant_homes
from homing.engine.placement.claimed import claimed_homes, claims, others_claims
from homing.engine.placement.decide import decide
from homing.engine.placement.displacement import Load
from homing.engine.replicas.deletion_cost import MARK, Mark, Replica, marks
from homing_e2e import framework_pods as fp

from .helpers import NOW, by_role, owner, pod, snapshot

A, B = "team-a", "team-b"
BOUND = 1_000_000


def elsewhere(ref: OwnerRef, namespace: str) -> OwnerRef:
    """The same reference read in another namespace: what a pod there keys it under."""
    return ref.model_copy(update={"namespace": namespace})


# == identity: every lookup stays in the pod's namespace ==============================================

DEPLOY_A = owner(kind="Deployment", name="web", namespace=A, uid="tenancy-deploy-a")
DEPLOY_B = owner(kind="Deployment", name="web", namespace=B, uid="tenancy-deploy-b")
RS_A = owner(kind="ReplicaSet", name="web-7c9d4f", namespace=A, uid="tenancy-rs-a")
RS_B = owner(kind="ReplicaSet", name="web-5b8e2a", namespace=B, uid="tenancy-rs-b")


def replica_pod(namespace: str, rs: OwnerRef, pod_hash: str | None = None) -> dict:
    p = pod(name=f"{rs.name}-x", namespace=namespace, controller=rs)
    if pod_hash:
        p["metadata"]["labels"] = {"pod-template-hash": pod_hash}
    return p


@dataclass
class IdentityCase:
    namespace: str  # the pod's
    learned: list  # (namespace, ReplicaSet uid, its controller) as the ReplicaSet watch delivered them
    expected: OwnerRef
    pod_hash: str | None = None


IDENTITY = {
    "own-namespace-replicaset-lifted-to-its-deployment": IdentityCase(A, [(A, RS_A.uid, DEPLOY_A)], DEPLOY_A),
    # the defect: keyed by uid alone, B's pod was lifted to A's Deployment
    "another-namespaces-replicaset-uid-is-not-lifted": IdentityCase(B, [(A, RS_A.uid, DEPLOY_A)], elsewhere(RS_A, B)),
    "another-namespaces-uid-then-the-deployment-of-its-name-in-the-pods-namespace": IdentityCase(
        B, [(A, RS_A.uid, DEPLOY_A), (B, RS_B.uid, DEPLOY_B)], DEPLOY_B, pod_hash="7c9d4f"),
    "another-namespaces-uid-and-no-deployment-of-its-name-here": IdentityCase(
        B, [(A, RS_A.uid, DEPLOY_A)], elsewhere(RS_A, B), pod_hash="7c9d4f"),
    "another-namespaces-standalone-replicaset-is-unknown-here": IdentityCase(
        B, [(A, RS_A.uid, None), (B, RS_B.uid, DEPLOY_B)], DEPLOY_B, pod_hash="7c9d4f"),
    "a-controller-in-another-namespace-is-not-followed": IdentityCase(A, [(A, RS_A.uid, DEPLOY_B)], RS_A),
}


@pytest.mark.parametrize("case", IDENTITY.values(), ids=IDENTITY.keys())
def test_a_replicaset_is_looked_up_in_the_pods_namespace(case: IdentityCase):
    workloads = WorkloadIndex()
    for namespace, rs_uid, controller in case.learned:
        workloads.learn_replicaset(namespace, rs_uid, controller)
    got = resolve_owner(replica_pod(case.namespace, RS_A, case.pod_hash), workloads)
    assert got == case.expected
    assert got.namespace == case.namespace


def test_forgetting_a_replicaset_forgets_it_in_its_namespace_only():
    workloads = WorkloadIndex()
    workloads.learn_replicaset(A, RS_A.uid, DEPLOY_A)
    workloads.forget_replicaset(B, RS_A.uid)  # no such ReplicaSet in B: nothing to forget
    assert resolve_owner(replica_pod(A, RS_A), workloads) == DEPLOY_A
    workloads.forget_replicaset(A, RS_A.uid)
    assert resolve_owner(replica_pod(A, RS_A), workloads) == RS_A


LWS_A = OwnerRef(api_version="leaderworkerset.x-k8s.io/v1", kind="LeaderWorkerSet", name="vllm", namespace=A, uid="t-lws-a")
JOBSET_A = OwnerRef(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name="train", namespace=A, uid="t-js-a")
JOBSET_B = OwnerRef(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name="train", namespace=B, uid="t-js-b")
TRAINJOB_A = OwnerRef(api_version="trainer.kubeflow.org/v1alpha1", kind="TrainJob", name="train", namespace=A, uid="t-tj-a")


def frameworks_index() -> WorkloadIndex:
    workloads = WorkloadIndex()
    fw = workloads.frameworks
    fw.live.update((LWS_KIND, JOBSET_KIND))
    fw.learn_leaderworkerset(LWS_A)
    fw.learn_jobset(JOBSET_A, TRAINJOB_A)
    return workloads


FRAMEWORKS = {
    "leaderworkerset-of-another-namespace": (fp.lws_worker(B, "vllm", 0, 1, "sts"), None),
    "jobset-uid-of-another-namespace": (fp.jobset_pod(B, "train", JOBSET_A.uid, "w", 0, 0, "job"), None),
    "trainjob-of-another-namespace": (fp.trainjob_pod(B, "train", JOBSET_A.uid, 0, 0, "job"), None),
    "own-namespace-trainjob": (fp.trainjob_pod(A, "train", JOBSET_A.uid, 0, 0, "job"), TRAINJOB_A),
}


@pytest.mark.parametrize("p, expected", FRAMEWORKS.values(), ids=FRAMEWORKS.keys())
def test_a_framework_object_is_looked_up_in_the_pods_namespace(p, expected):
    """A live watch that lacks the object in the pod's namespace leaves the pod untracked,
    as for a JobSet or LeaderWorkerSet not delivered yet."""
    assert resolve_owner(p, frameworks_index()) == expected


def test_a_jobsets_controller_in_another_namespace_is_not_its_trainjob():
    workloads = frameworks_index()
    workloads.frameworks.learn_jobset(JOBSET_B, TRAINJOB_A)  # a TrainJob of A cannot control B's JobSet
    assert resolve_owner(fp.trainjob_pod(B, "train", JOBSET_B.uid, 0, 0, "job"), workloads) == JOBSET_B


# -- as a property: another namespace's objects change nothing a pod resolves to -------------------

NAMESPACES = ("a", "b")
RS_NAMES = ("web-1a", "web-2b", "api-3c")


@st.composite
def identity_worlds(draw):
    """ReplicaSets and JobSets in both namespaces (each object's controller in its own
    namespace, as the watches deliver them), and a pod in one namespace naming any of them."""
    replicasets = []
    for i in range(draw(st.integers(0, 5))):
        ns = draw(st.sampled_from(NAMESPACES))
        deployment = draw(st.sampled_from([None, "web", "api"]))
        controller = None if deployment is None else owner(kind="Deployment", name=deployment, namespace=ns,
                                                             uid=f"d-{ns}-{deployment}-{draw(st.integers(0, 1))}")
        replicasets.append((ns, f"rs{i}", draw(st.sampled_from(RS_NAMES)), controller))
    jobsets = [(draw(st.sampled_from(NAMESPACES)), f"js{i}", draw(st.sampled_from(["train", "eval"])))
               for i in range(draw(st.integers(0, 3)))]
    pod_ns = draw(st.sampled_from(NAMESPACES))
    if draw(st.booleans()) or not jobsets:
        uid = draw(st.sampled_from([r[1] for r in replicasets] + ["rs-unknown"]))
        name = draw(st.sampled_from(RS_NAMES))
        rs = owner(kind="ReplicaSet", name=name, namespace=pod_ns, uid=uid)
        p = replica_pod(pod_ns, rs, draw(st.sampled_from([None, "1a", "2b", "3c"])))
    else:
        _, uid, name = draw(st.sampled_from(jobsets))
        p = fp.jobset_pod(pod_ns, name, uid, "w", 0, 0, "job")
    return replicasets, jobsets, pod_ns, p


def learned(replicasets, jobsets, only: str | None = None) -> WorkloadIndex:
    workloads = WorkloadIndex()
    workloads.frameworks.live.add(JOBSET_KIND)
    for ns, uid, _name, controller in replicasets:
        if only in (None, ns):
            workloads.learn_replicaset(ns, uid, controller)
    for ns, uid, name in jobsets:
        if only in (None, ns):
            workloads.frameworks.learn_jobset(
                OwnerRef(api_version="jobset.x-k8s.io/v1alpha2", kind="JobSet", name=name, namespace=ns, uid=uid), None)
    return workloads


@hsettings(max_examples=400, deadline=None)
@given(identity_worlds())
def test_another_namespaces_objects_never_change_what_a_pod_resolves_to(world):
    replicasets, jobsets, pod_ns, p = world
    got = resolve_owner(p, learned(replicasets, jobsets))
    assert got == resolve_owner(p, learned(replicasets, jobsets, only=pod_ns))
    assert got is None or got.namespace == pod_ns


# == what holds a node: a scheduler's bind, or having run there =======================================

JOB = owner(kind="Job", name="train", namespace=A, uid="tenancy-job", api_version="batch.volcano.sh/v1alpha1")
SQUAT = owner(kind="Job", name="squat", namespace=A, uid="tenancy-squat", api_version="batch.volcano.sh/v1alpha1")
POOL = owner(kind="Deployment", name="infer", namespace=A, uid="tenancy-pool")
SCHEDULED = {"type": "PodScheduled", "status": "True"}
NODES = ("n1", "n2", "n3")


def on_node(node: str | None, status: dict | None, ref: OwnerRef = JOB, rank: str | None = "0", uid: str = "p0",
            deleting: bool = False) -> dict:
    annotations = {"volcano.sh/task-index": rank} if rank is not None else {}
    p = pod(name=f"{ref.name}-{uid}", namespace=ref.namespace, controller=ref, annotations=annotations,
            node_name=node, uid=uid)
    if status is not None:
        p["status"] = status
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    return p


def observe(index: MemoryIndex, event: str | None, p: dict, now: float = NOW) -> list:
    view = pod_view(p, WorkloadIndex(), BOUND)
    return lifecycle.observe(index, event, view, snapshot(NODES), now, lifecycle.Policy())


HOLDS = {
    "created-with-nodeName-no-status": (None, False),
    "phase-pending-only": ({"phase": "Pending"}, False),
    "pod-scheduled-false": ({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}, False),
    "other-conditions-only": ({"phase": "Pending", "conditions": [{"type": "Initialized", "status": "True"}]}, False),
    "unreadable-conditions": ({"conditions": ["x", None, {"type": "PodScheduled"}], "containerStatuses": "junk"}, False),
    "failed-alone-as-the-pod-gc-writes-it": ({"phase": "Failed", "reason": "DeletionByPodGC"}, False),
    "bound-by-a-scheduler": ({"phase": "Pending", "conditions": [SCHEDULED]}, True),
    "its-kubelet-took-it": ({"phase": "Pending", "containerStatuses": [
        {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}]}, True),
    "running": ({"phase": "Running"}, True),
    "succeeded": ({"phase": "Succeeded"}, True),
    "rejected-by-its-kubelet-for-the-node": ({"phase": "Failed", "reason": "UnexpectedAdmissionError"}, True),
}


@pytest.mark.parametrize("status, holds", HOLDS.values(), ids=HOLDS.keys())
def test_a_pod_holds_its_node_only_once_bound_or_run(status, holds):
    assert pod_view(on_node("n1", status), WorkloadIndex(), BOUND).node == ("n1" if holds else None)


BINDS = {k: v for k, v in HOLDS.items()
         if k not in ("succeeded", "failed-alone-as-the-pod-gc-writes-it", "rejected-by-its-kubelet-for-the-node")}


@pytest.mark.parametrize("status, holds", BINDS.values(), ids=BINDS.keys())
def test_only_a_pod_that_holds_its_node_is_remembered_there(status, holds):
    index = MemoryIndex()
    observe(index, "ADDED", on_node("n1", status))
    mem = index.owner(JOB.key)
    assert (mem.ranks["0"].node if mem and "0" in mem.ranks else None) == ("n1" if holds else None)


def test_a_pod_created_on_a_node_that_does_not_exist_claims_nothing():
    """The squatter's pod names "ghost" and never runs; a sibling waits, so the squatter is
    active. Nothing of it is remembered, and nobody keeps off "ghost"."""
    index = MemoryIndex()
    observe(index, "ADDED", on_node("ghost", None, ref=SQUAT, rank="0", uid="s0"))
    observe(index, "ADDED", on_node(None, {"phase": "Pending"}, ref=SQUAT, rank="1", uid="s1"))
    observe(index, lifecycle.DELETED, on_node("ghost", None, ref=SQUAT, rank="0", uid="s0"))
    assert index.owner(SQUAT.key) is None
    assert "ghost" not in claimed_homes(index, JOB.key, (), None, others_claims(index, JOB.key, NOW), 256)
    assert list(claims(index, NOW)) == []


def test_a_pod_that_names_a_node_it_does_not_hold_neither_waits_nor_keeps_its_owner_active():
    """The job's rank 0 ran on n1 and was deleted; its only pod left names a node no scheduler
    bound it to. It is not pending (no scheduler will place it) and not active: n1 is not claimed."""
    index = MemoryIndex()
    observe(index, "ADDED", on_node("n1", {"phase": "Running"}))
    observe(index, lifecycle.DELETED, on_node("n1", {"phase": "Running"}))
    observe(index, "ADDED", on_node("n2", None, rank="1", uid="p1"))
    assert index.has_live_pods(JOB.key)
    assert not index.active(JOB.key, NOW) and index.pending_count(JOB.key) == 0
    assert index.occupied_nodes(JOB.key) == set()
    assert list(claims(index, NOW)) == []


def test_a_rankless_pod_that_names_a_node_it_does_not_hold_adds_nothing_to_its_pool():
    index = MemoryIndex()
    observe(index, "ADDED", on_node("n1", {"phase": "Running"}, ref=POOL, rank=None, uid="r0"))
    observe(index, "ADDED", on_node("ghost", None, ref=POOL, rank=None, uid="r1"))
    assert set(index.owner(POOL.key).pool) == {"n1"}
    assert index.pending_count(POOL.key) == 0


def test_the_bind_is_remembered_when_the_status_shows_it():
    """Created naming n2, taken by n2's kubelet a moment later: remembered then, as a new bind."""
    index = MemoryIndex()
    observe(index, "ADDED", on_node("n2", None))
    effects = observe(index, "MODIFIED", on_node("n2", {"phase": "Pending", "conditions": [SCHEDULED]}), now=NOW + 1)
    assert index.owner(JOB.key).ranks["0"].node == "n2"
    assert [type(e) for e in effects] == [lifecycle.Remembered]
    assert index.active(JOB.key, NOW)


@pytest.mark.parametrize(
    "reason, faults",
    [
        pytest.param("OutOfhuawei.com/Ascend910", [], id="rejected-for-the-workloads-size"),
        pytest.param("UnexpectedAdmissionError", ["n1"], id="rejected-for-the-node"),
    ],
)
def test_a_bound_pod_keeps_its_node_when_its_kubelet_rewrites_its_status_bare(reason, faults):
    """A kubelet that rejects a bound pod writes phase Failed and its reason, dropping
    PodScheduled: the pod still ended on the node it held, judged there, and the node is
    its vacant home once the pod is gone."""
    index = MemoryIndex()
    observe(index, "ADDED", on_node("n1", {"phase": "Pending", "conditions": [SCHEDULED]}))
    bare = on_node("n1", {"phase": "Failed", "reason": reason})
    observe(index, "MODIFIED", bare, now=NOW + 1)
    assert [m.node for m in index.owner(JOB.key).ranks["0"].faults or ()] == faults
    observe(index, lifecycle.DELETED, bare, now=NOW + 2)
    assert "n1" in index.vacant and index.owner(JOB.key).ranks["0"].node == "n1"


# -- as a property: a pod that never held its node leaves no trace of it ----------------------------

ghost_event = st.tuples(
    st.sampled_from(["ADDED", "MODIFIED", lifecycle.DELETED, lifecycle.LISTED]),
    st.sampled_from(["g0", "g1", "r0", "r1"]),  # g*: name "ghost" and never show a placement; r*: real pods
    st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    st.booleans(),  # deleting
    st.sampled_from(["0", "1", None]),  # rank
)


@hsettings(max_examples=300, deadline=None)
@given(st.lists(ghost_event, max_size=25))
def test_a_node_named_but_never_held_is_never_remembered_vacant_or_claimed(events):
    index = MemoryIndex()
    for t, (kind, uid, phase, deleting, rank) in enumerate(events):
        if uid.startswith("g"):
            status = {"phase": "Failed"} if phase == "Failed" else {"phase": "Pending"}  # nothing a kubelet writes
            p = on_node("ghost", status, ref=SQUAT, rank=rank, uid=uid, deleting=deleting)
        else:
            p = on_node("n1", {"phase": phase, "conditions": [SCHEDULED]}, ref=SQUAT, rank=rank, uid=uid, deleting=deleting)
        observe(index, kind, p, now=NOW + t)
        mem = index.owner(SQUAT.key)
        remembered = {e.node for e in mem.ranks.values()} | set(mem.pool) if mem else set()
        assert "ghost" not in remembered
        assert "ghost" not in index.vacant and "ghost" not in index.occupied_nodes(SQUAT.key)
        assert "ghost" not in {node for node, _ in claims(index, NOW + t)}


# == across namespaces: steered by one's own namespace unless tenants share nodes ======================

TRAIN_A = owner(kind="Job", name="train", namespace=A, uid="tenancy-train-a", api_version="batch.volcano.sh/v1alpha1")
NODE_NAMES = [f"n{i}" for i in range(8)]


def waiting_owner(index: MemoryIndex, ref: OwnerRef, homes: tuple[str, ...], waits: bool) -> None:
    """`ref`'s ranks ran on `homes` and were evicted; with `waits`, a pod of it is pending."""
    for r, node in enumerate(homes):
        index.record_bind(ref, f"worker/{r}", node, (), NOW - 600)
        index.vacate(node, ref.key, NOW - 60 + r)
    if waits:
        index.pod_seen(f"{ref.uid}-pending", LivePod(ref.key, "worker/0", None))


def train_pod(namespace: str = A) -> dict:
    ref = TRAIN_A if namespace == A else elsewhere(TRAIN_A, namespace)
    return pod(name="train-0", namespace=namespace, controller=ref, annotations={"volcano.sh/task-index": "0"})


@pytest.mark.parametrize(
    "other_ns, waits, shared, claimed, cleared",
    [
        pytest.param(A, True, False, True, True, id="own-namespaces-claim"),
        pytest.param(B, True, False, False, False, id="another-namespaces-claim-steers-nothing"),
        pytest.param(B, True, True, True, True, id="another-namespaces-claim-on-shared-nodes"),
        pytest.param(A, False, False, False, True, id="own-namespaces-vacant-home"),
        pytest.param(B, False, False, False, False, id="another-namespaces-vacant-home-steers-nothing"),
        pytest.param(B, False, True, False, True, id="another-namespaces-vacant-home-on-shared-nodes"),
    ],
)
def test_claims_and_vacant_homes_steer_only_their_own_namespace(other_ns, waits, shared, claimed, cleared):
    index = MemoryIndex()
    other = owner(kind="Job", name="other", namespace=other_ns, uid=f"tenancy-other-{other_ns}")
    waiting_owner(index, other, ("m0", "m1"), waits)
    view = seen_from(index, A, shared=shared)
    d = decide(train_pod(), view, WorkloadIndex(), snapshot(["m0", "m1", "n0"]), Settings(), NOW)
    terms = by_role(d.terms)
    assert ({"m0", "m1"} <= set(terms["claimed"].values) if "claimed" in terms else False) == claimed
    assert ({"m0", "m1"} <= set(terms["keep-clear"].values) if "keep-clear" in terms else False) == cleared


def test_the_view_of_the_whole_cluster_is_the_index_itself():
    index = MemoryIndex()
    assert seen_from(index, A, shared=True) is index


def full_of(loads: dict[str, Load]) -> tuple[MemoryIndex, ClusterSnapshot]:
    index = MemoryIndex()
    for i, (node, load) in enumerate(loads.items()):
        index.occupy(f"p{i}", node, load)
    return index, ClusterSnapshot({n: NodeState(n, Health.HEALTHY, npus=8) for n in loads})


def burst_replica(namespace: str) -> dict:
    deploy = owner(kind="Deployment", name="infer", namespace=namespace, uid=f"tenancy-infer-{namespace}")
    p = pod(name="infer-0", namespace=namespace, controller=deploy, resources={"huawei.com/Ascend910": "8"})
    p["spec"]["containers"][0]["resources"]["requests"] = {"huawei.com/Ascend910": "8"}
    p["spec"]["priority"] = 1000
    return p


@pytest.mark.parametrize(
    "shared, victim",
    [
        pytest.param(False, "team-a/train", id="only-its-own-namespaces-workload"),
        pytest.param(True, "team-b/train", id="any-namespace-on-shared-nodes"),
    ],
)
def test_a_burst_displaces_only_its_own_namespaces_workloads(shared, victim):
    """Nothing is free: B's training, of the lowest priority, would be the victim; A's own
    lower-priority training holds as much."""
    loads = {"n0": Load("team-b/train", 50, 8), "n1": Load("team-a/train", 100, 8)}
    index, snap = full_of(loads)
    view = seen_from(index, A, shared=shared)
    d = decide(burst_replica(A), view, WorkloadIndex(), snap, Settings(), NOW)
    assert d.victim == victim
    me = Load(f"{A}/tenancy-infer-{A}", 1000, 8)
    assert set(eviction_victims(me, view, snap).nodes) == set(every_victim(me, view, snap).nodes)


def test_with_no_workload_of_its_own_to_displace_the_burst_names_none():
    loads = {f"n{i}": Load("team-b/train-big", 100, 8) for i in range(3)}
    index, snap = full_of(loads)
    d = decide(burst_replica(A), seen_from(index, A), WorkloadIndex(), snap, Settings(), NOW)
    assert d.victim is None and "displace" not in {t.role for t in d.terms}


def replica(namespace: str, node: str, cost: str | None = None) -> Replica:
    return Replica(namespace, f"infer-{node}", f"{namespace}/infer", node, cost)


@pytest.mark.parametrize(
    "r, claimants, shared, wanted",
    [
        pytest.param(replica(A, "n1"), {"n1": {"team-a/train"}}, False, "mark", id="own-namespaces-claim-marks"),
        pytest.param(replica(B, "n1"), {"n1": {"team-a/train"}}, False, None, id="another-namespaces-claim-does-not"),
        pytest.param(replica(B, "n1"), {"n1": {"team-a/train"}}, True, "mark", id="shared-nodes-it-does"),
        pytest.param(replica(B, "n1", MARK), {"n1": {"team-a/train"}}, False, "clear",
                     id="homings-mark-for-another-namespaces-claim-goes"),
        pytest.param(replica(B, "n1"), {"n1": {"team-a/train", "team-b/train"}}, False, "mark",
                     id="its-own-namespaces-claimant-among-others"),
    ],
)
def test_a_replica_is_marked_only_for_a_claim_of_its_own_namespace(r, claimants, shared, wanted):
    got = marks([("uid", r)], claimants, [], shared=shared)
    if wanted is None:
        assert got == []
    elif wanted == "clear":
        assert [(m.value, m.node) for m in got] == [(None, "n1")]
    else:
        assert len(got) == 1 and isinstance(got[0], Mark) and got[0].value is not None
        assert got[0].claimant.startswith(f"{r.namespace}/") or shared


def test_a_replicas_mark_follows_only_its_own_namespaces_claimants_by_default():
    """The default (no setting passed) is the cluster's default: tenants do not share nodes."""
    assert marks([("uid", replica(B, "n1"))], {"n1": {"team-a/train"}}, []) == []


# -- as a property: a namespace's view is the whole index restricted to its owners -------------------

ops = st.lists(st.tuples(
    st.sampled_from(["bind", "vacate", "reoccupy", "wait", "forget", "age"]),
    st.sampled_from(["a", "b", "c"]),  # the owner's namespace
    st.integers(0, 2),  # which owner of it
    st.sampled_from(NODE_NAMES),
    st.booleans(),  # rankless
), max_size=40)


@hsettings(max_examples=300, deadline=None)
@given(ops, st.sampled_from(["a", "b", "c"]))
def test_a_namespaces_view_is_the_index_restricted_to_that_namespace(steps, ns):
    index = MemoryIndex()
    for t, (op, owner_ns, i, node, rankless) in enumerate(steps):
        ref = owner(kind="Deployment" if rankless else "Job", name=f"o{i}", namespace=owner_ns, uid=f"o{i}")
        now = NOW - 1000 + t
        if op == "bind":
            index.record_bind(ref, None if rankless else f"worker/{t % 3}", node, (), now)
        elif op == "vacate" and index.owner(ref.key) is not None:
            index.vacate(node, ref.key, now)
        elif op == "reoccupy":
            index.reoccupy(node, ref.key)
        elif op == "wait":
            index.pod_seen(f"pending-{t}", LivePod(ref.key, None if rankless else "worker/0", None))
        elif op == "forget":
            index.forget(ref.key)
        elif op == "age":
            index.drop_old_vacancies(now, 5)
        view = seen_from(index, ns)
        mine = sorted((n, k) for n, k in claims(index, NOW) if k.startswith(f"{ns}/"))
        assert sorted(claims(view, NOW)) == mine
        assert set(vacant_homes(view, None, 100)) == {
            n for n in vacant_homes(index, None, 100)
            if any(k.startswith(f"{ns}/") and (n in index.owner(k).home_counts or n in index.owner(k).pool)
                   for k in index.vacant.get(n, ()) if index.owner(k) is not None)}
        assert view.disrupted() == {k for k in index.disrupted() if k.startswith(f"{ns}/")}
        assert list(claims(seen_from(index, ns, shared=True), NOW)) == list(claims(index, NOW))


def test_a_namespaces_claims_come_most_recently_vacated_first_by_its_own_vacancies():
    """Another namespace vacating n0 last does not move n0 ahead in A's order."""
    index = MemoryIndex()
    mine = owner(kind="Job", name="mine", namespace=A, uid="tenancy-order-a")
    theirs = owner(kind="Job", name="theirs", namespace=B, uid="tenancy-order-b")
    for r, node in enumerate(("n0", "n1")):
        index.record_bind(mine, f"worker/{r}", node, (), NOW - 600)
    index.record_bind(theirs, "worker/0", "n0", (), NOW - 600)
    index.vacate("n0", mine.key, NOW - 30)
    index.vacate("n1", mine.key, NOW - 20)
    index.vacate("n0", theirs.key, NOW - 10)
    index.pod_seen("mine-pending", LivePod(mine.key, "worker/0", None))
    index.pod_seen("theirs-pending", LivePod(theirs.key, "worker/0", None))
    assert [n for n, _ in claims(seen_from(index, A), NOW)] == ["n1", "n0"]
    assert list(vacant_homes(seen_from(index, A), None, 10)) == ["n1", "n0"]
    assert [n for n, _ in claims(index, NOW)] == ["n0", "n0", "n1"]
