"""Topology-aware homing against the real API server (behaviour.md "Topology"): for each job kind a
whole job is deleted and recreated, and each pod's terms name its old node and its
block's old domain; a job scaled out gets domain terms for its new ranks."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from homing.config import Settings
from homing.placementmemory import merge, read_object
from homing_e2e import objects as o

pytestmark = pytest.mark.cluster

SUPERPOD, RACK = "homing.io/superpod-id", "homing.io/rack-id"
SWITCH, SPINE = "e2e.homing.io/switch", "e2e.homing.io/spine"  # the multilevel tree in conftest.py
PART = "e2e.homing.io/part"


@dataclass
class Cluster:
    """Two super-pods of two racks of two nodes, and a spare super-pod."""

    ns: str
    nodes: list[str]  # a0 a1 a2 a3 b0 b1 b2 b3 c0 c1
    superpod: dict[str, str]
    rack: dict[str, str]


async def cluster(kube, ns: str) -> Cluster:
    names, superpod, rack = [], {}, {}
    for sp in "abc":
        for i in range(4 if sp != "c" else 2):
            name = f"{sp}{i}-{ns}"
            superpod[name], rack[name] = f"{ns}-{sp}", f"{ns}-{sp}{i // 2}"
            labels = {SUPERPOD: superpod[name], RACK: rack[name], SWITCH: rack[name], SPINE: superpod[name]}
            names.append(await o.node(kube, name, labels=labels))
    return Cluster(ns, names, superpod, rack)


async def run_and_restart(kube, c: Cluster, owner: dict, ranks: int, annotations, labels=lambda r: {}) -> list[dict]:
    """Rank r runs on node r, the whole job is deleted, and recreated."""
    for r in range(ranks):
        await o.pod(kube, c.ns, f"job-{r}", owner=owner, annotations=annotations(r), labels=labels(r))
        await o.bind(kube, c.ns, f"job-{r}", c.nodes[r])
        await o.running(kube, c.ns, f"job-{r}")

    async def remembered():
        mems = await o.placement_memories(kube, c.ns)
        return mems and ((mems[0].get("status") or {}).get("summary") or {}).get("ranks") == ranks

    await o.eventually(remembered, what=f"{ranks} ranks remembered")
    for r in range(ranks):
        await o.delete_pod(kube, c.ns, f"job-{r}")
    return [await o.pod(kube, c.ns, f"job-{r}", owner=owner, annotations=annotations(r), labels=labels(r)) for r in range(ranks)]


INNER, MIDDLE, OUTER = Settings().weights.domains  # the domain weights, innermost first


def domain_terms(pod: dict) -> dict[int, list[str]]:
    """weight -> values of homing's domain terms (INNER innermost, MIDDLE, OUTER)."""
    out = {}
    for t in o.terms(pod):
        (expr,) = t["preference"]["matchExpressions"]
        if t["weight"] in (INNER, MIDDLE, OUTER) and expr["operator"] == "In":
            out[t["weight"]] = (expr["key"], sorted(expr["values"]))
    return out


def volcano(r: int, **extra: str) -> dict[str, str]:
    return {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(r), **extra}


async def test_superpod_job_returns_to_its_nodes_and_superpods(kube, operator, ns):
    c = await cluster(kube, ns)
    owner = await o.owner_stand_in(kube, ns, "sp-job")
    ann = lambda r: volcano(r, **{"sp-block": "32"})  # 4 nodes a block  # noqa: E731
    again = await run_and_restart(kube, c, owner, 6, ann)  # ranks 0-3 on super-pod a, 4-5 on b
    for r, pod in enumerate(again):
        assert o.home(pod) == c.nodes[r]
        want = c.superpod[c.nodes[0 if r < 4 else 4]]
        assert o.decision(pod)["domains"] == [f"superPod={want}"] and o.decision(pod)["kind"] == "super-pod"
        assert domain_terms(pod) == {INNER: (SUPERPOD, [want])}
    # Scale out: ranks 6 and 7 belong to block 1, whose mates ran on super-pod b.
    for r in (6, 7):
        new = await o.pod(kube, ns, f"job-{r}", owner=owner, annotations=ann(r))
        assert o.home(new) is None
        assert domain_terms(new) == {INNER: (SUPERPOD, [c.superpod[c.nodes[4]]])}
        assert o.decision(new)["reason"] == "no-memory"


async def test_rack_windowed_job_gets_rack_then_superpod(kube, operator, ns):
    c = await cluster(kube, ns)
    owner = await o.owner_stand_in(kube, ns, "ra-job")
    ann = lambda r: volcano(r, **{"sp-block": "32", "ra-block": "16"})  # noqa: E731
    lab = lambda r: {"huawei.com/schedule_policy": "chip8-node8-ra64-sp"}  # noqa: E731
    again = await run_and_restart(kube, c, owner, 4, ann, lab)
    for r, pod in enumerate(again):
        rack = c.rack[c.nodes[r // 2 * 2]]
        assert o.home(pod) == c.nodes[r]
        assert domain_terms(pod) == {INNER: (RACK, [rack]), MIDDLE: (SUPERPOD, [c.superpod[c.nodes[0]]])}
    new = await o.pod(kube, ns, "job-5", owner=owner, annotations=ann(5), labels=lab(5))
    assert domain_terms(new) == {}  # block 2 (ranks 4-5) has no memory yet: nothing to prefer


async def test_multilevel_job_uses_the_resource_level_tree(kube, operator, ns):
    c = await cluster(kube, ns)
    owner = await o.owner_stand_in(kube, ns, "ml-job")
    ann = lambda r: volcano(r, **{"huawei.com/affinity-config": "level1=2,level2=4"})  # noqa: E731
    lab = lambda r: {"huawei.com/schedule_policy": "multilevel"}  # noqa: E731
    again = await run_and_restart(kube, c, owner, 6, ann, lab)
    for r, pod in enumerate(again):
        assert o.home(pod) == c.nodes[r]
        assert domain_terms(pod) == {
            INNER: (SWITCH, [c.rack[c.nodes[r // 2 * 2]]]),
            MIDDLE: (SPINE, [c.superpod[c.nodes[r // 4 * 4]]]),
        }
    new = await o.pod(kube, ns, "job-7", owner=owner, annotations=ann(7), labels=lab(7))
    assert domain_terms(new) == {MIDDLE: (SPINE, [c.superpod[c.nodes[4]]])}  # its level-1 pair is new


async def test_bad_topology_annotation_warns_and_uses_the_node_strategy(kube, operator, ns):
    c = await cluster(kube, ns)
    owner = await o.owner_stand_in(kube, ns, "bad-job")
    ann = lambda r: volcano(r, **{"sp-block": "12"})  # not a multiple of 8 NPUs  # noqa: E731
    again = await run_and_restart(kube, c, owner, 2, ann)
    assert o.home(again[0]) == c.nodes[0] and domain_terms(again[0]) == {}
    assert "kind" not in o.decision(again[0])


async def _hypernodes(kube, c: Cluster) -> dict[str, str]:
    """Tier 1: one HyperNode per rack (label selector); tier 2: one per super-pod (its racks)."""
    path = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
    tier1 = {}
    for rack in sorted(set(c.rack.values())):
        name = f"sw-{rack}"
        tier1[rack] = name
        member = {"type": "Node", "selector": {"labelMatch": {"matchLabels": {SWITCH: rack}}}}
        await kube.request("POST", path, body={"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                                               "metadata": {"name": name}, "spec": {"tier": 1, "members": [member]}})
    for sp in sorted(set(c.superpod.values())):
        racks = sorted({c.rack[n] for n in c.nodes if c.superpod[n] == sp})
        members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": tier1[r]}}} for r in racks]
        await kube.request("POST", path, body={"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                                               "metadata": {"name": f"spine-{sp}"}, "spec": {"tier": 2, "members": members}})
    return tier1


async def test_hypernode_job_with_subgroups(kube, operator, ns):
    c = await cluster(kube, ns)
    tier1 = await _hypernodes(kube, c)
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "hn-job"},
        "spec": {
            "minMember": 6,
            "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
            "subGroupPolicy": [{"name": "part", "matchLabelKeys": [PART], "networkTopology": {"mode": "soft", "highestTierAllowed": 1}}],
        },
    }
    await kube.request("POST", f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups", body=podgroup)
    owner = await o.owner_stand_in(kube, ns, "hn-job")
    ann = lambda r: volcano(r, **{"scheduling.k8s.io/group-name": "hn-job"})  # noqa: E731
    lab = lambda r: {PART: "0" if r < 4 else "1"}  # noqa: E731

    async def operator_sees_the_podgroup():
        probe = await o.pod(kube, ns, "probe", owner=owner, annotations=ann(0), labels=lab(0), dry_run=True)
        return o.decision(probe).get("kind") == "hypernode"

    await o.eventually(operator_sees_the_podgroup, what="the operator knows the PodGroup and HyperNodes")
    again = await run_and_restart(kube, c, owner, 6, ann, lab)
    spine_a = c.superpod[c.nodes[0]]
    for r, pod in enumerate(again):
        assert o.home(pod) == c.nodes[r]
        # Tier 1 is the sub-group's switch (ties to the lowest rank); tier 2 the whole job's majority spine.
        switch = c.rack[c.nodes[0 if r < 4 else 4]]
        assert o.decision(pod)["domains"] == [f"tier1={tier1[switch]}", f"tier2=spine-{spine_a}"]
        assert domain_terms(pod) == {
            INNER: (SWITCH, [switch]),
            MIDDLE: (SWITCH, sorted({c.rack[n] for n in c.nodes if c.superpod[n] == spine_a})),
        }
    mem = merge([read_object(x) for x in await o.written_memories(kube, ns)])
    assert mem.ranks["worker/4"].group == f"part:{PART}=1"
    # each rank's topology path kept its HyperNodes
    assert sum(any(level == "tier2" for level, _ in e.topology) for e in mem.ranks.values()) >= 6
