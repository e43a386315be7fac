"""Pods in a kube-scheduler 1.37 PodGroup keep their owner and rank. The Job controller
(gate WorkloadWithJob) writes `spec.schedulingGroup.podGroupName` and adds the PodGroup
as a second, non-controller ownerReference; a user's own group names it in the spec only.
The workload's controller (the Job, or the JobSet above it) stays the owner, and the
rank is still the completion index."""
from __future__ import annotations

import pytest

from homing.engine.identity import WorkloadIndex, resolve_owner, resolve_rank

JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid", "controller": True, "blockOwnerDeletion": True}
PODGROUP = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": "train-5f6d-train-pgt-0", "uid": "pg-uid"}


def job_pod(index: int, refs: list[dict], group: str | None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "train:1", "resources": {"limits": {"huawei.com/Ascend910": "8"}}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"metadata": {"name": f"train-{index}-abcde", "namespace": "ai", "uid": f"p{index}", "ownerReferences": refs,
                         "labels": {"batch.kubernetes.io/job-completion-index": str(index), "job-name": "train"},
                         "annotations": {"batch.kubernetes.io/job-completion-index": str(index)}},
            "spec": spec}


@pytest.mark.parametrize("refs, group", [
    pytest.param([JOB, PODGROUP], PODGROUP["name"], id="job-controller-made-the-group"),
    pytest.param([PODGROUP, JOB], PODGROUP["name"], id="podgroup-reference-listed-first"),
    pytest.param([JOB], "my-group", id="the-users-own-group"),
    pytest.param([JOB], None, id="no-group"),
])
def test_a_group_member_keeps_its_jobs_identity(refs, group):
    p = job_pod(3, refs, group)
    owner = resolve_owner(p, WorkloadIndex())
    assert owner is not None and (owner.kind, owner.uid, owner.namespace) == ("Job", "job-uid", "ai")
    rank = resolve_rank(p, owner.kind, 1_000_000)
    assert rank.rank is not None and rank.rank.key == "3" and rank.warning is None


def test_a_pod_owned_only_by_its_podgroup_is_not_tracked():
    """A PodGroup is never a pod's controller; a pod whose only owner is one has none."""
    assert resolve_owner(job_pod(0, [PODGROUP], PODGROUP["name"]), WorkloadIndex()) is None
