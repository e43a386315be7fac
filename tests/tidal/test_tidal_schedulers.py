"""The two schedulers a tidal cluster runs behind one face (e2e/homing_e2e/tidal_schedulers.py):
which variant gets which, the objects each submits for a gang and a replica, and when a step
is over. No cluster: these are the objects the harness posts."""
from __future__ import annotations

import shutil

import pytest
import yaml

from homing_e2e import tidal_schedulers as ts
from homing_e2e.scheduler import PROFILE
from homing_e2e.tidal import PodSeen, TidalCluster

NS = "ai"


@pytest.mark.parametrize("variant, tide, kind, expected_tide", [
    pytest.param("volcano", "preempt", ts.Volcano, "preempt", id="volcano"),
    pytest.param("volcano+gangpreempt+homing", "gangreclaim", ts.Volcano, "gangreclaim", id="volcano-keeps-its-tide"),
    pytest.param("kube-scheduler", "single", ts.KubeSchedulerGangs, "single", id="kube-scheduler-single"),
    pytest.param("kube-scheduler+homing", "preempt", ts.KubeSchedulerGangs, "all", id="a-volcano-tide-means-evicted-whole"),
])
def test_scheduling_for(variant, tide, kind, expected_tide):
    s = ts.scheduling_for(variant, tide)
    assert type(s) is kind and s.tide == expected_tide


def test_kube_scheduler_refuses_volcano_flags():
    with pytest.raises(ValueError, match="Volcano's flags"):
        ts.scheduling_for("kube-scheduler", "all", ("--percentage-nodes-to-find=100",))


@pytest.mark.parametrize("variant, tide, kinds, queue", [
    pytest.param("volcano", "preempt", ["Job"], None, id="volcano-one-queue"),
    pytest.param("volcano", "reclaim", ["Job"], "training", id="volcano-two-queues"),
    pytest.param("kube-scheduler", "all", ["PodGroup", "Job"], None, id="kube-scheduler-group-first"),
])
def test_training_objects(variant, tide, kinds, queue):
    objs = ts.scheduling_for(variant, tide).training("llama", NS, 4, "train:30g", {"sp-block": "4"})
    assert [body["kind"] for _, body in objs] == kinds
    assert all(path.startswith("/apis/") and f"/namespaces/{NS}/" in path for path, _ in objs)
    job = objs[-1][1]
    assert job["spec"].get("queue") == queue
    template = job["spec"]["tasks"][0]["template"] if "tasks" in job["spec"] else job["spec"]["template"]
    assert template["metadata"]["annotations"] == {"sp-block": "4"}
    assert template["spec"]["priorityClassName"] == ts.TRAINING_PRIORITY
    assert template["spec"]["containers"][0]["resources"]["limits"] == {ts.NPU: "8"}


@pytest.mark.parametrize("variant, tide, scheduler, annotations", [
    pytest.param("volcano", "preempt", "volcano", {}, id="volcano-one-queue"),
    pytest.param("volcano", "gangreclaim", "volcano", {ts.QUEUE_ANNOTATION: "inference"}, id="volcano-inference-queue"),
    pytest.param("kube-scheduler", "all", PROFILE, {}, id="kube-scheduler-profile"),
])
def test_replica_template(variant, tide, scheduler, annotations):
    t = ts.scheduling_for(variant, tide).replica_template("serve:15g")
    assert t["metadata"]["annotations"] == annotations
    assert t["spec"]["priorityClassName"] == ts.INFERENCE_PRIORITY
    assert t["spec"]["schedulerName"] == scheduler


@pytest.mark.parametrize("live, sizes, volcano, kube", [
    pytest.param({}, {}, True, True, id="no-training"),
    pytest.param({"a": {"0", "1"}}, {"a": 2}, True, True, id="every-rank-exists"),
    pytest.param({"a": {"0"}}, {"a": 2}, True, False, id="a-rank-waits-out-its-back-off"),
    pytest.param({"a": {"0", "1"}}, {"a": 2, "b": 1}, True, False, id="a-job-with-no-pod"),
])
def test_step_over(live, sizes, volcano, kube):
    assert ts.Volcano("volcano", "preempt").step_over(live, sizes) is volcano
    assert ts.KubeSchedulerGangs("kube-scheduler", "all").step_over(live, sizes) is kube


@pytest.mark.parametrize("variant, arguments", [
    pytest.param("volcano", None, id="volcano-defaults"),
    pytest.param("volcano+homing", {"nodeaffinity.weight": 10}, id="homing-weight"),
    pytest.param("volcano+imagelocality", {"imagelocality.weight": 10}, id="image-locality-weight"),
])
def test_volcano_conf_sets_nodeorder(variant, arguments):
    conf = yaml.safe_load(ts.volcano_conf(variant, "preempt"))
    nodeorder = [p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "nodeorder"]
    assert nodeorder and all(p.get("arguments") == arguments for p in nodeorder)


def _seen(key: str, node: str | None, leaving: bool = False) -> PodSeen:
    return PodSeen(key=key, image="train:30g", image_gb=30.0, npus=8, seen=0.0, ranked=True, node=node, leaving=leaving)


@pytest.mark.parametrize("pods, bound, live", [
    pytest.param([("a/0", "n0"), ("a/1", "n1")], True, {"a": {"0", "1"}}, id="every-rank-bound"),
    pytest.param([("a/0", "n0"), ("a/1", None)], False, {"a": {"0", "1"}}, id="a-rank-pending"),
    pytest.param([("a/0", "n0"), ("a/1", "n1", True)], False, {"a": {"0"}}, id="a-rank-leaving"),
    pytest.param([("a/worker/0", "n0"), ("a/worker/1", "n1")], True, {"a": {"0", "1"}}, id="volcano-task-keys"),
])
def test_training_ranks_bound_and_live(pods, bound, live):
    """What a step waits for: every rank bound (a night), every rank with a pod (a Job's back-off)."""
    cluster = TidalCluster("volcano", 1, {}, 1.0)
    try:
        cluster.gang_sizes = {"a": 2}
        cluster.recorder.pods = {f"uid-{i}": _seen(*p) for i, p in enumerate(pods)}
        assert cluster.all_training_bound() is bound
        assert cluster.live_ranks() == live
    finally:
        shutil.rmtree(cluster.workdir, ignore_errors=True)
