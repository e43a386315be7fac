"""Claimed homes on the real Volcano scheduler: a gang restarts while one rank's home is
cordoned or faulted. That rank goes to a node nobody waits for; it never takes a sibling's
home, warm with the same image as it is (Volcano's image locality favours it), so every
other rank finds its own home free and goes back there."""
from __future__ import annotations

import os

import pytest

from homing_e2e import objects as o
from homing_e2e.tidal import NS, TidalCluster

pytestmark = pytest.mark.cluster

IMAGES = {"train:30g": 30}


# "lagging": homing's watches run 1.5 s behind the cluster, as on a busy control plane: the
# restarted gang's pods are admitted before homing has seen the old ones go
@pytest.mark.parametrize("how,lag_s", [("cordoned", 0.0), ("faulted", 0.0), ("cordoned", 1.5)],
                         ids=["cordoned", "faulted", "cordoned-lagging"])
async def test_a_rank_whose_home_is_taken_leaves_its_siblings_homes_alone(binaries, how, lag_s):
    # HOMING_E2E_CLAIMED_HOMES=false runs the same story with the preference off: it fails (the cascade)
    env = {"HOMING_PREFERENCES__CLAIMED_HOMES": os.environ.get("HOMING_E2E_CLAIMED_HOMES", "true")}
    c = await TidalCluster("volcano+homing", superpods=2, images=IMAGES, bandwidth_gbps=1, operator_env=env,
                           operator_lag_s=lag_s).start()
    try:
        await c.training_job("llama", 4, "train:30g")
        await c.settle(quiet=3, at_least=4)
        first = c.last_nodes("llama/")
        assert len(first) == 4

        async def reported():  # the kubelets' part: every home lists the image (image locality reads it)
            nodes = [await c.kube.request("GET", f"/api/v1/nodes/{n}") for n in first.values()]
            return all(any("train:30g" in i["names"] for i in n["status"].get("images") or []) for n in nodes)

        await o.eventually(reported, what="the homes report the training image")
        taken = first["llama/worker/0"]
        if how == "cordoned":
            await c.cordon(taken, True)
            # the gang restarts: one pod deleted, Volcano's RestartJob recreates all four
            await c.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods/llama-worker-0", body={"gracePeriodSeconds": 0})
        else:
            await c.fault(taken, True)  # the taint manager evicts rank 0; the gang restarts
        try:
            await o.eventually(lambda: _all_rebound(c, first), timeout=90, what="the gang bound again")
        except TimeoutError as err:  # the cluster's own view, so that a miss says which part stalled
            raise AssertionError(f"{err}: {await c.pending_state('llama/', nodes=(taken,))}") from err
        now = c.last_nodes("llama/")
        pod = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods/llama-worker-0")
        why = {"decision": (pod["metadata"].get("annotations") or {}).get("homing.io/decision"),
               "affinity": (pod["spec"].get("affinity") or {}).get("nodeAffinity")}
        assert now["llama/worker/0"] not in first.values(), f"rank 0 took a sibling's home: {now} (was {first}); rank 0 was given {why}"
        for key in ("llama/worker/1", "llama/worker/2", "llama/worker/3"):
            assert now[key] == first[key], f"{key} moved: {now} (was {first})"
    finally:
        await c.stop()


async def _all_rebound(c: TidalCluster, first: dict[str, str]) -> bool:
    training = [r for r in c.recorder.replacements if r.key.startswith("llama/")]
    return len(training) >= 4 and not any(p.node is None for p in c.recorder.pods.values() if p.key.startswith("llama/"))
