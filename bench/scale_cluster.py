"""Fills a local control plane for one step of bench/scale.py: fake nodes, HyperNodes in
three tiers, owner stand-ins, PlacementMemory objects written directly in the operator's
own encoding, and live pods bound through `pods/binding`."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from homing.config import Settings
from homing.engine.cluster.topology.sources import TopologySources
from homing.engine.memory.entries import FaultMark, OwnerMemory, RankEntry, Stats
from homing.engine.model import OwnerRef
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.placementmemory import GROUP, PLURAL, VERSION, encode, resource_body, shard_name, snapshot
from homing_e2e.fake_kubelet import FAKE_NODE_LABEL
from homing_e2e.objects import NPU, node_status, set_not_ready_taint

NODES_PER_RACK, RACKS_PER_SUPERPOD = 8, 6
OPTED_IN = {"homing.io/enabled": "true"}


@dataclass(frozen=True)
class Owner:
    ref: OwnerRef
    ranks: int
    first_node: int  # rank r's remembered node is (first_node + r) % nodes


@dataclass
class Layout:
    """Who is remembered where: the gang that restarts, the remembered workload that
    bursts, and the bulk owners (whose first ranks are the live pods)."""

    nodes: int
    paths: list[tuple[tuple[str, str], ...]] = field(default_factory=list)  # node index -> its topology path
    gang: Owner | None = None
    burst: Owner | None = None
    bulk: list[Owner] = field(default_factory=list)
    plain: OwnerRef | None = None  # a stand-in in the namespace homing does not serve

    def node(self, i: int) -> str:
        return node_name(i % self.nodes)


def node_name(i: int) -> str:
    return f"node-{i:05d}"


def node_topology(i: int) -> tuple[tuple[str, str], ...]:
    rack = i // NODES_PER_RACK
    return (("rack", f"r{rack}"), ("superPod", f"sp{rack // RACKS_PER_SUPERPOD}"))


async def pooled(jobs: Iterable[Callable[[], Awaitable[object]]], width: int) -> None:
    """Runs the jobs with at most `width` in flight (the API server on 2 shared cores
    answers best with a few dozen)."""
    it = iter(jobs)

    async def worker() -> None:
        for job in it:
            await job()

    await asyncio.gather(*(worker() for _ in range(width)))


async def create(kube: Kube, path: str, body: dict) -> dict:
    try:
        return await kube.request("POST", path, body=body, timeout=120)
    except KubeError as err:
        if err.status != 409:
            raise
        return {}


async def namespaces(kube: Kube) -> None:
    for name, labels in (("mem", OPTED_IN), ("gang", OPTED_IN), ("burst", OPTED_IN), ("plain", {}), ("homing-system", {})):
        await create(kube, "/api/v1/namespaces", {"metadata": {"name": name, "labels": labels}})
    for name in ("mem", "gang", "burst", "plain"):  # pods wait for their namespace's default ServiceAccount
        for _ in range(300):
            try:
                await kube.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
                break
            except KubeError:
                await asyncio.sleep(0.2)


def node_body(i: int) -> dict:
    (_, rack), (_, superpod) = node_topology(i)
    labels = {"kubernetes.io/hostname": node_name(i), FAKE_NODE_LABEL: "true",
              "homing.io/rack-id": rack, "homing.io/superpod-id": superpod}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name(i), "labels": labels},
            "status": node_status(True)}


async def nodes(kube: Kube, count: int, width: int) -> None:
    """Ready 8-NPU nodes, status set on create (nodes take it). The API server taints every
    new node not-ready and only the node lifecycle controller (off here) lifts it: without
    this the operator saw every node unhealthy and decided "none" for every pod."""
    async def one(i: int) -> None:
        await create(kube, "/api/v1/nodes", node_body(i))
        await set_not_ready_taint(kube, node_name(i), False)

    await pooled((lambda i=i: one(i) for i in range(count)), width)


def topologies(count: int, hypernode_bodies: list[dict]) -> list[tuple[tuple[str, str], ...]]:
    """Each node's path as the operator computes it from these nodes and HyperNodes, so the
    memory written here is what an earlier run of the operator would have left."""
    sources = TopologySources(Settings())
    for i in range(count):
        sources.node_changed(node_body(i))
    for body in hypernode_bodies:
        sources.hypernode_changed(body)
    return [sources.snapshot.topology(node_name(i)) for i in range(count)]


def hypernode_tiers(count: int, nodes: int) -> list[dict]:
    """`count` HyperNodes in three tiers: ~90 % leaves over runs of nodes, ~9 % spines over
    leaves, the rest roots over spines (450 / 45 / 5 at 500)."""
    roots = max(1, count // 100)
    spines = max(roots, count // 11)
    leaves = max(spines, count - spines - roots)
    out = []
    for i in range(leaves):
        first, last = i * nodes // leaves, (i + 1) * nodes // leaves - 1
        if first > last:
            continue
        members = [{"type": "Node", "selector": {"exactMatch": {"name": node_name(n)}}} for n in range(first, last + 1)]
        out.append(_hypernode(f"leaf-{i}", 1, members))
    leaf_names = [h["metadata"]["name"] for h in out]
    for tier, (prefix, groups, below) in enumerate((("spine", spines, leaf_names), ("root", roots, None)), start=2):
        below = below if below is not None else [h["metadata"]["name"] for h in out if h["spec"]["tier"] == 2]
        size = -(-len(below) // groups)
        for g in range(groups):
            chunk = below[g * size:(g + 1) * size]
            if chunk:
                members = [{"type": "HyperNode", "selector": {"exactMatch": {"name": n}}} for n in chunk]
                out.append(_hypernode(f"{prefix}-{g}", tier, members))
    return out


def _hypernode(name: str, tier: int, members: list[dict]) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


async def hypernodes(kube: Kube, count: int, nodes: int, width: int) -> list[dict]:
    bodies = hypernode_tiers(count, nodes) if count else []
    path = "/apis/topology.volcano.sh/v1alpha1/hypernodes"
    await pooled((lambda b=b: create(kube, path, b) for b in bodies), width)
    return bodies


async def stand_in(kube: Kube, ns: str, name: str) -> OwnerRef:
    """A ConfigMap plays the job controller: pods and PlacementMemory are owned by it, so
    the garbage collector leaves them be."""
    cm = await create(kube, f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}})
    if not cm:
        cm = await kube.request("GET", f"/api/v1/namespaces/{ns}/configmaps/{name}")
    return OwnerRef(api_version="v1", kind="ConfigMap", name=name, namespace=ns, uid=cm["metadata"]["uid"])


async def layout(kube: Kube, nodes: int, ranks: int, gang: int, burst: int, per_owner: int,
                 paths: list[tuple[tuple[str, str], ...]]) -> Layout:
    """Owners whose ranks add up to `ranks`: the gang, the burst, then bulk owners."""
    out = Layout(nodes=nodes, paths=paths)
    out.gang = Owner(await stand_in(kube, "gang", "gang"), gang, 0)
    out.burst = Owner(await stand_in(kube, "burst", "burst"), burst, gang)
    left, start, i = ranks - gang - burst, gang + burst, 0
    while left > 0:
        size = min(per_owner, left)
        out.bulk.append(Owner(await stand_in(kube, "mem", f"train-{i:04d}"), size, start))
        left, start, i = left - size, start + size, i + 1
    out.plain = await stand_in(kube, "plain", "plain")
    return out


def rank_key(r: int) -> str:
    return f"worker/{r}"


def memory_of(owner: Owner, lay: Layout, now: float) -> OwnerMemory:
    """Every rank on its node, warm, a fault mark on 1 % (as bench/engine.py remembers)."""
    entries = {}
    for r in range(owner.ranks):
        n = (owner.first_node + r) % lay.nodes
        faults = [FaultMark(node=lay.node(n + 1), at=now - 60)] if r % 100 == 0 else None
        entries[rank_key(r)] = RankEntry(node=node_name(n), bound_at=now - 3600, topology=lay.paths[n], warm=True, faults=faults)
    return OwnerMemory(owner=owner.ref, last_seen=now, ranks=entries, stats=Stats())


def collection(ns: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}"


async def write_memory(kube: Kube, mem: OwnerMemory) -> int:
    """One owner's objects as the operator's store writes them (create, then status)."""
    statuses = (await asyncio.to_thread(encode, snapshot(mem))).statuses
    for number, status in enumerate(statuses, 1):
        await create(kube, collection(mem.owner.namespace), resource_body(mem.owner, number))
        path = f"{collection(mem.owner.namespace)}/{shard_name(mem.owner, number)}/status"
        await kube.request("PATCH", path, body={"status": status}, content_type=MERGE_PATCH, timeout=120)
    return len(statuses)


async def memories(kube: Kube, lay: Layout, width: int) -> int:
    now = time.time()
    owners = [o for o in (lay.gang, lay.burst, *lay.bulk) if o is not None]
    written: list[int] = []

    async def one(o: Owner) -> None:
        written.append(await write_memory(kube, memory_of(o, lay, now)))

    await pooled((lambda o=o: one(o) for o in owners), min(width, 4))
    return sum(written)


def pod_body(owner: OwnerRef, rank: int, name: str) -> dict:
    ref = {"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name, "uid": owner.uid, "controller": True}
    requests = {NPU: "8"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "ownerReferences": [ref],
                     "annotations": {"volcano.sh/task-spec": "worker", "volcano.sh/task-index": str(rank)}},
        "spec": {"containers": [{"name": "main", "image": "registry.invalid/train:15g",
                                 "resources": {"requests": requests, "limits": requests}}],
                 "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0},
    }


async def bind(kube: Kube, ns: str, name: str, node: str) -> None:
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    await kube.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=body, timeout=120)


async def pod_on(kube: Kube, owner: OwnerRef, rank: int, name: str, node: str | None) -> float:
    """Creates one pod (and binds it when a node is given); returns when it was bound."""
    await kube.request("POST", f"/api/v1/namespaces/{owner.namespace}/pods", body=pod_body(owner, rank, name), timeout=120)
    if node is not None:
        await bind(kube, owner.namespace, name, node)
    return time.monotonic()


async def live_pods(kube: Kube, lay: Layout, count: int, width: int) -> int:
    """The bulk owners' first ranks, live and bound to the node their memory names."""
    jobs, left = [], count
    for o in lay.bulk:
        for r in range(min(o.ranks, left)):
            node = node_name((o.first_node + r) % lay.nodes)
            jobs.append(lambda o=o, r=r, node=node: pod_on(kube, o.ref, r, f"{o.ref.name}-{r}", node))
        left -= min(o.ranks, left)
    await pooled(jobs, width)
    return len(jobs)
