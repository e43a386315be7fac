"""behaviour.md "Identity": the owner is the pod's controller, lifted from a ReplicaSet to its Deployment."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from homing.engine.identity import WorkloadIndex, resolve_owner
from homing.engine.model import OwnerRef

NS = "team-a"


def _ref(kind: str, name: str, uid: str, namespace: str = NS, api_version: str = "apps/v1") -> OwnerRef:
    return OwnerRef(api_version=api_version, kind=kind, name=name, namespace=namespace, uid=uid)


DEPLOY = _ref("Deployment", "web", "deploy-uid")
DEPLOY_OTHER_NS = _ref("Deployment", "web", "deploy-other-uid", namespace="team-b")
RS_NEW = _ref("ReplicaSet", "web-7c9d4f", "rs-new-uid")
RS_OLD = _ref("ReplicaSet", "web-5b8e2a", "rs-old-uid")
VCJOB = _ref("Job", "llama", "vcjob-uid", api_version="batch.volcano.sh/v1alpha1")
STS = _ref("StatefulSet", "db", "sts-uid")


def _ownerref(ref: OwnerRef, controller=True) -> dict:
    out = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if controller is not None:
        out["controller"] = controller
    return out


@dataclass
class Case:
    refs: list  # the pod's ownerReferences
    expected: OwnerRef | None
    learned: list = field(default_factory=list)  # (rs uid, controller) fed to the index
    labels: dict | None = None
    namespace: str = NS


CASES = [
    pytest.param(Case(refs=[_ownerref(VCJOB)], expected=VCJOB), id="controller-ref"),
    pytest.param(Case(refs=[_ownerref(STS, controller=False), _ownerref(VCJOB)], expected=VCJOB),
                 id="non-controller-ref-before-controller-ignored"),
    pytest.param(Case(refs=[_ownerref(STS, controller=None)], expected=None), id="ref-without-controller-flag"),
    pytest.param(Case(refs=[_ownerref(STS, controller=False)], expected=None), id="controller-false"),
    pytest.param(Case(refs=[], expected=None), id="no-refs"),
    pytest.param(Case(refs=None, expected=None), id="ownerreferences-absent"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=DEPLOY, learned=[(RS_NEW.uid, DEPLOY)]),
                 id="replicaset-lifted-to-deployment"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[(RS_NEW.uid, None)]),
                 id="standalone-replicaset-cached-with-none"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[(RS_NEW.uid, None), (RS_OLD.uid, DEPLOY)],
                      labels={"pod-template-hash": "7c9d4f"}),
                 id="standalone-cached-none-wins-over-name-guess"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=DEPLOY, learned=[(RS_OLD.uid, DEPLOY)],
                      labels={"pod-template-hash": "7c9d4f"}),
                 id="brand-new-replicaset-found-by-name"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[(RS_OLD.uid, DEPLOY_OTHER_NS)],
                      labels={"pod-template-hash": "7c9d4f"}),
                 id="brand-new-replicaset-deployment-only-in-other-namespace"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[(RS_OLD.uid, DEPLOY)]),
                 id="brand-new-replicaset-without-hash-label"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[(RS_OLD.uid, DEPLOY)],
                      labels={"pod-template-hash": "ffffff"}),
                 id="brand-new-replicaset-hash-not-name-suffix"),
    pytest.param(Case(refs=[_ownerref(RS_NEW)], expected=RS_NEW, learned=[], labels={"pod-template-hash": "7c9d4f"}),
                 id="brand-new-replicaset-no-deployment-known"),
    pytest.param(Case(refs=[{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}],
                      expected=None), id="missing-uid"),
    pytest.param(Case(refs=[{"apiVersion": "apps/v1", "name": "db", "uid": "u", "controller": True}],
                      expected=None), id="missing-kind"),
    pytest.param(Case(refs=[{"kind": "StatefulSet", "name": "db", "uid": "u", "controller": True}],
                      expected=None), id="missing-apiversion"),
    pytest.param(Case(refs=["not-a-dict", None, 3], expected=None), id="refs-not-dicts"),
    pytest.param(Case(refs=["not-a-dict", _ownerref(VCJOB)], expected=VCJOB), id="garbage-then-controller"),
]


@pytest.mark.parametrize("case", CASES)
def test_resolve_owner(case: Case):
    workloads = WorkloadIndex()
    for rs_uid, controller in case.learned:  # each ReplicaSet in its controller's namespace
        workloads.learn_replicaset(controller.namespace if controller else NS, rs_uid, controller)
    meta = {"name": "pod-x", "namespace": case.namespace}
    if case.refs is not None:
        meta["ownerReferences"] = case.refs
    if case.labels is not None:
        meta["labels"] = case.labels
    assert resolve_owner({"metadata": meta}, workloads) == case.expected


def test_owner_namespace_is_the_pods():
    got = resolve_owner({"metadata": {"namespace": "ns-x", "ownerReferences": [_ownerref(VCJOB)]}}, WorkloadIndex())
    assert got.namespace == "ns-x" and got.uid == VCJOB.uid


def test_forgotten_replicaset_falls_back_to_name():
    workloads = WorkloadIndex()
    workloads.learn_replicaset(NS, RS_NEW.uid, None)
    workloads.learn_replicaset(NS, RS_OLD.uid, DEPLOY)
    pod = {"metadata": {"namespace": NS, "ownerReferences": [_ownerref(RS_NEW)], "labels": {"pod-template-hash": "7c9d4f"}}}
    assert resolve_owner(pod, workloads) == RS_NEW
    workloads.forget_replicaset(NS, RS_NEW.uid)
    assert resolve_owner(pod, workloads) == DEPLOY


def test_pods_of_two_rollouts_share_the_deployment_owner():
    """A rollout creates a new ReplicaSet; both versions' pods key on the Deployment's uid."""
    workloads = WorkloadIndex()
    workloads.learn_replicaset(NS, RS_OLD.uid, DEPLOY)
    workloads.learn_replicaset(NS, RS_NEW.uid, DEPLOY)
    old = {"metadata": {"namespace": NS, "ownerReferences": [_ownerref(RS_OLD)]}}
    new = {"metadata": {"namespace": NS, "ownerReferences": [_ownerref(RS_NEW)]}}
    assert resolve_owner(old, workloads).uid == resolve_owner(new, workloads).uid == DEPLOY.uid


def test_non_deployment_controller_of_replicaset_is_not_a_name_candidate():
    """Only Deployments are remembered by name for brand-new ReplicaSets."""
    workloads = WorkloadIndex()
    rollout = _ref("Rollout", "web", "rollout-uid", api_version="argoproj.io/v1alpha1")
    workloads.learn_replicaset(NS, RS_OLD.uid, rollout)
    assert workloads.deployments == {}
    pod = {"metadata": {"namespace": NS, "ownerReferences": [_ownerref(RS_NEW)], "labels": {"pod-template-hash": "7c9d4f"}}}
    assert resolve_owner(pod, workloads) == RS_NEW


# -- Deployment deleted and recreated under the same name ---------------------------------------
DEPLOY_NEW = _ref("Deployment", "web", "deploy-new-uid")
RS_RECREATED = _ref("ReplicaSet", "web-9a8b7c", "rs-recreated-uid")
RS_OF_NEW = _ref("ReplicaSet", "web-1f2e3d", "rs-of-new-uid")
LEARN, FORGET = "learn", "forget"


def _pod_of(rs: OwnerRef, pod_hash: str) -> dict:
    """A pod of `rs` admitted before the ReplicaSet watch delivered `rs`."""
    return {"metadata": {"namespace": NS, "ownerReferences": [_ownerref(rs)], "labels": {"pod-template-hash": pod_hash}}}


@pytest.mark.parametrize(
    "events, expected",
    [
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (FORGET, RS_OLD.uid, None)], RS_RECREATED,
                     id="last-replicaset-forgotten-forgets-the-deployment"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_OLD.uid, DEPLOY), (FORGET, RS_OLD.uid, None)],
                     RS_RECREATED, id="relearned-replicaset-counts-once"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_NEW.uid, DEPLOY), (FORGET, RS_OLD.uid, None)],
                     DEPLOY, id="deployment-kept-while-another-replicaset-is-known"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_OLD.uid, None)], RS_RECREATED,
                     id="orphaned-last-replicaset-forgets-the-deployment"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_OF_NEW.uid, DEPLOY_NEW)], DEPLOY_NEW,
                     id="new-deployment-uid-replaces-the-stale-one"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_OF_NEW.uid, DEPLOY_NEW), (LEARN, RS_OLD.uid, DEPLOY)],
                     DEPLOY_NEW, id="update-of-the-dying-old-replicaset-does-not-bring-the-stale-one-back"),
        pytest.param([(LEARN, RS_OLD.uid, DEPLOY), (LEARN, RS_OF_NEW.uid, DEPLOY_NEW), (FORGET, RS_OLD.uid, None)],
                     DEPLOY_NEW, id="old-replicaset-gone-keeps-the-new-deployment"),
        pytest.param([(LEARN, RS_OF_NEW.uid, DEPLOY_NEW), (LEARN, RS_OLD.uid, DEPLOY), (FORGET, RS_OLD.uid, None)],
                     DEPLOY_NEW, id="stale-listed-last-then-gone-falls-back-to-the-live-one"),
        pytest.param([(FORGET, "never-learned", None), (FORGET, None, None)], RS_RECREATED,
                     id="forgetting-unknown-replicasets-is-harmless"),
    ],
)
def test_recreated_deployment_never_resolves_to_the_old_uid(events, expected):
    workloads = WorkloadIndex()
    for what, rs_uid, controller in events:
        if what == LEARN:
            workloads.learn_replicaset(NS, rs_uid, controller)
        else:
            workloads.forget_replicaset(NS, rs_uid)
    assert resolve_owner(_pod_of(RS_RECREATED, "9a8b7c"), workloads) == expected
