"""Start-up and the watches (behaviour.md "Memory", "Operation"): memory first, then the live cluster on top of
it, before any admission is served. Every watch is a supervised Reflector: listed page by
page, resumed from its last version, listed again after a 410, and judged fresh or stale
by liveness. A re-list of pods treats every pod it no longer has as deleted."""
from __future__ import annotations

import asyncio
from collections.abc import Callable

from homing.engine.cluster_topology import mindcluster
from homing.operator import gcpause, logs
from homing.operator.frameworkwatch import JOBSET_PATH, LWS_PATH, JobSets, LeaderWorkerSets
from homing.operator.kube import Kube, KubeError
from homing.operator.reflector import Reflector
from homing.operator.runtime import Runtime
from homing.operator.selfhealth import Supervisor
from homing.placementmemory import GROUP, PLURAL, VERSION, primary_owner_key

log = logs.get("homing.startup")

Handle = Callable[[str | None, dict], None]
OPTIONAL_RETRY_SECONDS = 60.0  # how often to look for a CRD (Volcano's, a framework's) that is not installed yet


def cluster_watches(rt: Runtime) -> list[tuple[str, str, Handle, bool]]:
    """(resource, path, handler, optional): what the index needs before pods make sense."""
    c = rt.cluster
    return [
        ("namespaces", "/api/v1/namespaces", c.observe_namespace, False),
        ("replicasets", "/apis/apps/v1/replicasets", c.observe_replicaset, False),
        ("nodes", "/api/v1/nodes", c.observe_node, False),
        ("hypernodes", "/apis/topology.volcano.sh/v1alpha1/hypernodes", c.observe_hypernode, True),
        ("podgroups", "/apis/scheduling.volcano.sh/v1beta1/podgroups", c.observe_podgroup, True),
        ("leaderworkersets", LWS_PATH, LeaderWorkerSets(c.workloads.frameworks), True),
        ("jobsets", JOBSET_PATH, JobSets(c.workloads.frameworks), True),
    ]


class Relisted:
    """Wraps an observe_* handler so that after a re-list every object the listing lacks
    is handed over as DELETED (behaviour.md "Operation": no phantom node, namespace or PodGroup)."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.on_listed: Callable[[], None] | None = getattr(handle, "on_listed", None)  # a cache that says it is complete
        self.known: dict[str, dict] = {}  # uid -> the metadata a deletion needs

    def __call__(self, event: str | None, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if uid:
            if event == "DELETED":
                self.known.pop(uid, None)
            else:
                self.known[uid] = {k: meta[k] for k in ("name", "namespace", "uid") if k in meta}
        self.handle(event, obj)

    def listed(self, uids: set[str]) -> None:
        for uid in [u for u in self.known if u not in uids]:
            self.handle("DELETED", {"metadata": self.known.pop(uid)})
        if self.on_listed is not None:
            self.on_listed()


async def installed(kube: Kube, path: str) -> bool:
    try:
        await kube.request("GET", path, query=[("limit", "1")])
        return True
    except KubeError as err:
        if err.status == 403:  # no permission: like an absent CRD, not a reason to stop
            log.warning("optional resource not readable; not watched", path=path)
            return False
        if err.status == 404:
            return False
        raise


async def _watch_when_installed(kube: Kube, sup: Supervisor, reflector: Reflector) -> None:
    """A Volcano or framework CRD installed after homing started: watch it from then on."""
    while not await installed(kube, reflector.path):
        await asyncio.sleep(OPTIONAL_RETRY_SECONDS)
    log.info("resource installed; watching it now", resource=reflector.resource)
    sup.watch(reflector)
    await asyncio.Event().wait()  # a supervised loop: ending would read as dead


async def load(rt: Runtime, kube: Kube, sup: Supervisor) -> None:
    waiting: list[Reflector] = []
    for resource, path, handle, optional in cluster_watches(rt):
        relisted = Relisted(handle)
        reflector = Reflector(kube, resource, path, relisted, listed=relisted.listed)
        if optional and not await installed(kube, path):
            log.info("optional resource not installed; watched once it appears", path=path)
            sup.spawn(f"await:{resource}", lambda r=reflector: _watch_when_installed(kube, sup, r), restart=True)
            continue
        sup.watch(reflector)
        waiting.append(reflector)
    await asyncio.gather(*(r.listed_once.wait() for r in waiting))
    assert rt.store is not None
    loaded = await rt.store.load(rt.index, rt.owns_namespace)
    sup.watch(Reflector(kube, "placementmemories", f"/apis/{GROUP}/{VERSION}/{PLURAL}", lambda t, o: memory_event(rt, t, o)))
    pods = Reflector(kube, "pods", "/api/v1/pods", rt.pods.observe, listed=rt.pods.relisted)
    sup.watch(pods)
    await pods.listed_once.wait()
    gcpause.settle()  # the loaded index is long-lived: out of the collector's walks
    log.info("memory loaded", owners=len(rt.index.owners), ranks=rt.index.rank_count, resources=loaded)


def memory_event(rt: Runtime, event: str | None, body: dict) -> None:
    """Deleted by garbage collection (owner gone) or by hand (reset): forget it too."""
    key = primary_owner_key(body) if event == "DELETED" else None  # shards 2.. come and go with the owner's size
    if key is not None and rt.index.forget(key) is not None:
        if rt.store is not None:
            rt.store.forgotten(key)
        log.info("memory dropped with its PlacementMemory", owner_key=key, name=(body.get("metadata") or {}).get("name"))


def configmap_watches(rt: Runtime, kube: Kube, sup: Supervisor, copier: Handle | None) -> None:
    """MindCluster's per-node ConfigMaps, in their own namespaces (a Role there, not cluster-wide)."""
    def prefixed(prefix: str) -> Callable[[dict], bool]:
        return lambda cm: ((cm.get("metadata") or {}).get("name") or "").startswith(prefix)

    if rt.settings.topology.noded:
        path = f"/api/v1/namespaces/{mindcluster.NODE_INFO_NAMESPACE}/configmaps"
        sup.watch(Reflector(kube, "noded", path, rt.cluster.observe_nodeinfo, keep=prefixed(mindcluster.NODE_INFO_PREFIX)))
    if copier is not None:
        path = f"/api/v1/namespaces/{mindcluster.DEVICE_INFO_NAMESPACE}/configmaps"
        sup.watch(Reflector(kube, "deviceinfo", path, copier, keep=prefixed(mindcluster.DEVICE_INFO_PREFIX)))
