"""Start-up (behaviour.md "Memory", "Operation", "Claimed homes"): memory first, then the live
cluster on top of it, then the vacant homes the two make, before any admission is served
and before the leader's loops start. Each kopf-watched kind is listed once here, in
the order the memory needs (watches.py); kopf's watches begin when start-up is over, and a
re-list per kind hands over what they miss. MindCluster's ConfigMaps are watched by
homing's own reflectors: they live in two fixed namespaces where homing holds a Role, and
kopf watches a namespaced kind either cluster-wide or in the namespaces it serves."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from homing.engine.cluster.topology import mindcluster
from homing.kube.client import Kube
from homing.kube.health import gcpause
from homing.kube.health.selfhealth import Supervisor
from homing.kube.runtime import Runtime
from homing.kube.signals import logs
from homing.kube.watch.reflector import Reflector
from homing.kube.watch.watches import CLUSTER_KINDS, MEMORY, PODS, Watches

log = logs.get("homing.startup")

Handle = Callable[[str | None, dict[str, Any]], None]


async def load(rt: Runtime, watches: Watches) -> None:
    for kind in CLUSTER_KINDS:
        if not await watches.load(kind.name):
            log.info("optional resource not installed; watched once it appears", path=kind.path)
    assert rt.store is not None
    loaded = await rt.store.load(rt.index, rt.owns_namespace)
    memory = watches.kinds[MEMORY.name]
    memory.loaded, memory.last_listing = True, watches.clock()  # just read whole by the store; kopf's watch fills the ledger
    await watches.load(PODS.name)
    # Before any loop starts (the leader's deletion-cost marks among them): a new process's
    # watch saw nobody leave, so the vacant homes and claims come from memory and the listing.
    vacant = rt.pods.rebuild_claims()
    gcpause.settle()  # the loaded index is long-lived: out of the collector's walks
    log.info("memory loaded", owners=len(rt.index.owners), ranks=rt.index.rank_count, resources=loaded,
             vacant_homes=vacant, vacant_nodes=len(rt.index.vacant))


def relists(watches: Watches, sup: Supervisor) -> None:
    """One supervised re-list loop per kind (and the wait for an optional CRD to appear)."""
    for name in watches.kinds:
        sup.spawn(f"relist:{name}", functools.partial(watches.reconcile_forever, name))


def configmap_watches(rt: Runtime, kube: Kube, sup: Supervisor, copier: Handle | None) -> None:
    """MindCluster's per-node ConfigMaps, in their own namespaces (a Role there, not cluster-wide)."""
    def prefixed(prefix: str) -> Callable[[dict[str, Any]], bool]:
        return lambda cm: ((cm.get("metadata") or {}).get("name") or "").startswith(prefix)

    if rt.settings.topology.noded:
        path = f"/api/v1/namespaces/{mindcluster.NODE_INFO_NAMESPACE}/configmaps"
        sup.watch(Reflector(kube, "noded", path, rt.cluster.observe_nodeinfo, keep=prefixed(mindcluster.NODE_INFO_PREFIX)))
    if copier is not None:
        path = f"/api/v1/namespaces/{mindcluster.DEVICE_INFO_NAMESPACE}/configmaps"
        sup.watch(Reflector(kube, "deviceinfo", path, copier, keep=prefixed(mindcluster.DEVICE_INFO_PREFIX)))
