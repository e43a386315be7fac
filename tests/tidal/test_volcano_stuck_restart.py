"""A gang restart that Volcano's job controller leaves stuck is resumed by the tidal harness
(tidal_schedulers.Volcano.resume_stuck), so a day or a test goes on instead of waiting out its
limit with a gang missing. Stuck: the Job in Restarting still counting terminating pods that
are gone, its PodGroup deleted, and no event left for the controller to recount them."""
from __future__ import annotations

import pytest

from homing.kube.client import MERGE_PATCH
from homing_e2e import objects as o
from homing_e2e.tidal import NS, TidalCluster
from homing_e2e.tidal_schedulers import VOLCANO_JOB_LABEL, restart_command, stuck_restart

pytestmark = pytest.mark.cluster

JOB = "/apis/batch.volcano.sh/v1alpha1/namespaces/ai/jobs/llama"


@pytest.mark.parametrize("status, has_pods, stuck", [
    pytest.param({"state": {"phase": "Restarting"}, "terminating": 15}, False, True, id="restarting-counting-gone-pods"),
    pytest.param({"state": {"phase": "Restarting"}, "terminating": 15}, True, False, id="pods-still-going"),
    pytest.param({"state": {"phase": "Restarting"}, "terminating": 0}, False, False, id="nothing-terminating"),
    pytest.param({"state": {"phase": "Pending"}, "terminating": 3}, False, False, id="pending"),
    pytest.param({}, False, False, id="no-status-yet"),
])
def test_stuck_restart(status, has_pods, stuck):
    assert stuck_restart(status, has_pods) is stuck


def test_restart_command_targets_the_job():
    cmd = restart_command({"metadata": {"name": "llama", "namespace": "ai", "uid": "u-1"}})
    assert cmd["action"] == "RestartJob" and cmd["target"] == {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "llama", "uid": "u-1"}
    assert cmd["metadata"]["namespace"] == "ai" and cmd["metadata"]["ownerReferences"][0]["controller"] is True


async def test_a_stuck_restart_gets_a_restart_command_the_real_api_accepts(binaries):
    """The stuck state written by hand with the job controller stopped (a restarted controller
    recounts, so the live race cannot be replayed this way): resume_stuck waits its patience
    out, then sends a Command the real CRD accepts. The Command's effect on the live stall
    was seen on the tidal day (docs/dev/benchmarks-log.md, 2026-12-02)."""
    c = await TidalCluster("volcano", superpods=1, images={"train:30g": 30}, bandwidth_gbps=1).start()
    try:
        c.tasks.pop().cancel()  # the harness's own resuming loop: this test drives it by hand
        await c.training_job("llama", 4, "train:30g")
        await c.wait_bound("llama/", 4)
        controller = c.cp.procs["vc-controller-manager"]
        args = list(controller.args[1:])
        controller.terminate()
        controller.wait(10)
        pods = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", f"{VOLCANO_JOB_LABEL}=llama")])
        for pod in pods["items"]:
            await c.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}", body={"gracePeriodSeconds": 0})
        groups = c.scheduling.podgroups_path.format(ns=NS)
        for group in (await c.kube.request("GET", groups))["items"]:
            await c.kube.request("DELETE", f"{groups}/{group['metadata']['name']}")
        await c.kube.request("PATCH", f"{JOB}/status", content_type=MERGE_PATCH,
                             body={"status": {"state": {"phase": "Restarting"}, "terminating": 4, "running": 0,
                                              "retryCount": 1}})  # the eviction's restart, as the controller counted it
        await o.eventually(lambda: _no_pods(c), what="the gang's pods gone")
        assert await c.scheduling.resume_stuck(c.kube, NS, now=100.0) == []  # first seen stuck: patience
        assert await c.scheduling.resume_stuck(c.kube, NS, now=109.0) == []
        assert await c.scheduling.resume_stuck(c.kube, NS, now=110.0) == ["llama"]
        commands = await c.kube.request("GET", f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NS}/commands")
        assert [(x["action"], x["target"]["name"]) for x in commands["items"]] == [("RestartJob", "llama")]
        # One restart: the Command that resumes it is not a second one, nor takes the first away
        # (it once was taken off, and a day's restarts read one low for every gang resumed).
        assert await c.scheduling.restarts_by_job(c.kube, NS, {}) == {"llama": 1}
        # The Command is taken back before the controller returns: a restarted controller recounts
        # on its own, and its start racing the Command's restart is not what this test is about.
        await c.kube.request("DELETE", f"/apis/bus.volcano.sh/v1alpha1/namespaces/{NS}/commands/{commands['items'][0]['metadata']['name']}")
        c.cp.run("vc-controller-manager", args)
        await c.wait_bound("llama/", 4, timeout=60)
        await c.scheduling.resume_stuck(c.kube, NS, now=200.0)
        assert c.scheduling.stuck_since == {}  # running again: not even first seen stuck
    finally:
        await c.stop()


async def _no_pods(c: TidalCluster) -> bool:
    pods = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods", query=[("labelSelector", f"{VOLCANO_JOB_LABEL}=llama")])
    return not pods["items"]
