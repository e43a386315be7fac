"""The scale-in marks follow the order the real Volcano scheduler takes waiting gangs in.
Volcano's job controller deletes a restarted job's PodGroup and creates it again, so equal
gangs queue by their last restart, not by their names nor by when they were first created.
Two gangs wait for homes inference holds; the one created first and named first is restarted
last. Scaled in by one gang's worth, the ReplicaSet must free the homes of the gang Volcano
places first: freed the other way, that gang takes the other's homes and neither goes home."""
from __future__ import annotations

import asyncio

import pytest

from homing.engine.replicas.deletion_cost import ANNOTATION, is_mark
from homing_e2e import objects as o
from homing_e2e.tidal import NS, TidalCluster

pytestmark = pytest.mark.cluster

IMAGES = {"train:30g": 30, "serve:15g": 15}
RANKS = 4


async def podgroup_created(c: TidalCluster, job: str) -> str | None:
    groups = await c.kube.request("GET", c.scheduling.podgroups_path.format(ns=NS))
    return next((g["metadata"]["creationTimestamp"] for g in groups.get("items") or ()
                 if g["metadata"]["name"].startswith(f"{job}-")), None)


async def marks_by_job(c: TidalCluster, homes: dict[str, set[str]]) -> dict[str, list[int]]:
    """The marks on the replicas bound to each job's homes."""
    pods = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods")
    got: dict[str, list[int]] = {job: [] for job in homes}
    for p in pods.get("items") or ():
        cost = (p["metadata"].get("annotations") or {}).get(ANNOTATION)
        for job, nodes in homes.items():
            if p["spec"].get("nodeName") in nodes and p["metadata"]["name"].startswith("qwen") and is_mark(cost):
                got[job].append(int(cost))
    return got


async def test_the_gang_volcano_takes_first_has_its_homes_freed_first(binaries):
    c = await TidalCluster("volcano+homing", superpods=2, images=IMAGES, bandwidth_gbps=1).start()
    try:
        for job in ("alpha", "zeta"):  # alpha first by name and by creation
            await c.training_job(job, RANKS, "train:30g")
        await c.inference("qwen", 8, "serve:15g")
        await c.settle()
        homes = {job: set(c.last_nodes(f"{job}/").values()) for job in ("alpha", "zeta")}
        assert all(len(h) == RANKS for h in homes.values()), homes
        await c.scale("qwen", 16)  # both gangs preempted; inference holds all 16 nodes
        await c.settle()
        assert not c.nodes_of("alpha/") and not c.nodes_of("zeta/")

        async def both_waiting() -> bool:  # Volcano re-creates a restarted gang's PodGroup, then its pods
            live = c.live_ranks()
            return all([len(live.get(job, ())) == RANKS and bool(await podgroup_created(c, job)) for job in ("alpha", "zeta")])

        await o.eventually(both_waiting, timeout=60, what="both gangs waiting with their pods and PodGroups")
        # alpha restarts again (a pending pod deleted: Volcano's RestartJob), a second or more
        # later: its PodGroup is created anew and it now queues behind zeta
        before = await podgroup_created(c, "alpha")
        await asyncio.sleep(1.1)  # creation times are in seconds
        pods = await c.kube.request("GET", f"/api/v1/namespaces/{NS}/pods")
        pending = sorted(p["metadata"]["name"] for p in pods["items"] if p["metadata"]["name"].startswith("alpha-")
                         and not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"))
        assert pending, f"alpha has no pod waiting: {await c.pending_state('alpha/')}"
        await c.kube.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{pending[0]}", body={"gracePeriodSeconds": 0})

        async def recreated() -> bool:
            created = await podgroup_created(c, "alpha")
            return created is not None and created > (before or "") and len(c.live_ranks().get("alpha", ())) == RANKS

        await o.eventually(recreated, timeout=60, what="alpha's PodGroup created again with its pods")
        assert (await podgroup_created(c, "zeta")) < (await podgroup_created(c, "alpha"))

        async def zeta_first() -> bool:  # the marks are rewritten within a few passes of the restart
            got = await marks_by_job(c, homes)
            return all(len(v) == RANKS for v in got.values()) and max(got["zeta"]) < min(got["alpha"])

        try:
            await o.eventually(zeta_first, timeout=30, what="zeta's homes marked below alpha's")
        except TimeoutError as err:
            raise AssertionError(f"{err}: zeta queues first in Volcano; marks {await marks_by_job(c, homes)}") from err
        await c.scale("qwen", 16 - RANKS)  # one gang's worth of nodes
        await c.settle(quiet=4, until=lambda: len(c.nodes_of("zeta/")) == RANKS)
        assert set(c.nodes_of("zeta/")) == homes["zeta"], await c.pending_state("zeta/")
        assert not c.nodes_of("alpha/"), "alpha has no room yet"
        await c.scale("qwen", 8)
        await c.settle(quiet=4, until=lambda: len(c.nodes_of("alpha/")) == RANKS)
        assert set(c.nodes_of("alpha/")) == homes["alpha"], await c.pending_state("alpha/")
    finally:
        await c.stop()
