"""The harness's reading of kube-scheduler's gangs (e2e/homing_e2e/kube_gangs.py): which
job and rank an Indexed Job's pod is, and how many times a job was disrupted, counted from
the moments it lost a bound rank (kube-scheduler keeps no count as Volcano's retryCount)."""
from __future__ import annotations

import pytest

from homing_e2e import kube_gangs


@pytest.mark.parametrize("times, expected", [
    pytest.param([], 0, id="never"),
    pytest.param([5.0], 1, id="one-rank-once"),
    pytest.param([5.0, 5.1, 5.3, 6.0], 1, id="a-whole-gang-at-once"),
    pytest.param([5.0, 14.9, 24.8], 1, id="each-loss-within-the-gap-of-the-last"),
    pytest.param([5.0, 30.0], 2, id="two-disruptions"),
    pytest.param([30.0, 5.0, 5.2], 2, id="out-of-order"),
])
def test_disruptions(times, expected):
    assert kube_gangs.disruptions(times) == expected


@pytest.mark.parametrize("meta, expected", [
    pytest.param({"labels": {"batch.kubernetes.io/job-name": "llama", "batch.kubernetes.io/job-completion-index": "3"},
                  "annotations": {"batch.kubernetes.io/job-completion-index": "3"}}, ("llama", "3"), id="job-controller-labels"),
    pytest.param({"labels": {"job-name": "llama"}, "annotations": {"batch.kubernetes.io/job-completion-index": "0"}},
                 ("llama", "0"), id="legacy-job-name-label"),
    pytest.param({"labels": {"batch.kubernetes.io/job-name": "llama"}}, None, id="non-indexed-job"),
    pytest.param({"labels": {"app": "qwen"}}, None, id="a-replica"),
    pytest.param({}, None, id="no-labels"),
])
def test_rank_of(meta, expected):
    assert kube_gangs.rank_of(meta) == expected


def test_the_job_joins_its_own_group_and_is_not_failed_by_evictions():
    job = kube_gangs.indexed_job("llama", "ai", 8, {"containers": []}, {})
    spec = job["spec"]["template"]["spec"]
    assert spec["schedulingGroup"] == {"podGroupName": "llama"} and spec["restartPolicy"] == "Never"
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["parallelism"] == 8 and "backoffLimit" not in job["spec"]
    assert job["spec"]["backoffLimitPerIndex"] >= 100  # a whole day of evictions never fails a rank
    assert {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]} in job["spec"]["podFailurePolicy"]["rules"]
    group = kube_gangs.pod_group("llama", "ai", 8, "training-low", "single")
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 8}} and group["spec"]["disruptionMode"] == {"single": {}}
