"""The watched kinds, through kopf (behaviour.md "Operation"). kopf's watch of each kind
calls `deliver`; homing's own paged listing loads each kind at start-up, in the order
the memory needs, and lists it again every `watching.reconcile_seconds` and soon after
kopf lists it again itself: kopf hands a re-listed object over as it is but never says
which objects the listing lacked, so a pod deleted while its watch was away would stay.
The re-list hands over only what the watch missed (watchledger.py), and a change the
watch never sent, with nothing from it since, fails liveness.

After kopf's own listing only deletions can be missing (kopf handed every object over as it
was, and its watch goes on from there), so that re-list asks for identities alone
(client.METADATA_ONLY): a pod's metadata is a fraction of its bytes, and the watch falls
behind, and kopf lists again, exactly when the loop is busiest (bench/results, 5,000 nodes)."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import kopf

from homing.config import Settings
from homing.kube.client import METADATA_ONLY, Kube, KubeError, without_bookkeeping
from homing.kube.signals import logs, metrics
from homing.kube.watch.frameworkwatch import JobSets, LeaderWorkerSets
from homing.kube.watch.lister import list_pages
from homing.kube.watch.watchledger import Ledger, Tombstone, identity
from homing.placementmemory import GROUP, PLURAL, VERSION, primary_owner_key

if TYPE_CHECKING:
    from homing.kube.runtime import Runtime  # not at run time: runtime imports the adapters

log = logs.get("homing.watches")

Handle = Callable[[str | None, dict[str, Any]], None]
OPTIONAL_RETRY_SECONDS = 60.0  # how often to look for a CRD (Volcano's, a framework's) that is not installed yet


@dataclass(frozen=True)
class Kind:
    name: str
    group: str
    version: str
    plural: str
    optional: bool = False  # a CRD that may not be installed (Volcano's, a framework's)
    periodic: bool = True  # listed again every reconcile_seconds, not only after kopf's own re-list
    namespace: str = ""  # listed in one namespace only (the tests' own); the operator lists cluster-wide

    @property
    def path(self) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        return f"{base}/namespaces/{self.namespace}/{self.plural}" if self.namespace else f"{base}/{self.plural}"


# In the order start-up lists them: what the index needs before pods make sense, memory, pods.
CLUSTER_KINDS = (
    Kind("namespaces", "", "v1", "namespaces"),
    Kind("replicasets", "apps", "v1", "replicasets"),
    Kind("nodes", "", "v1", "nodes"),
    Kind("hypernodes", "topology.volcano.sh", "v1alpha1", "hypernodes", optional=True),
    Kind("podgroups", "scheduling.volcano.sh", "v1beta1", "podgroups", optional=True),
    Kind("leaderworkersets", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", optional=True),
    Kind("jobsets", "jobset.x-k8s.io", "v1alpha2", "jobsets", optional=True),
)
# Only its deletions matter (a reset by hand), and it is the largest kind: no periodic re-list.
MEMORY = Kind("placementmemories", GROUP, VERSION, PLURAL, periodic=False)
PODS = Kind("pods", "", "v1", "pods")
KINDS = (*CLUSTER_KINDS, MEMORY, PODS)


def memory_tombstone(obj: dict[str, Any]) -> Tombstone:
    """A PlacementMemory's deletion needs its owner and shard (primary_owner_key)."""
    status = obj.get("status") or {}
    return {**identity(obj), "status": {"owner": {"uid": (status.get("owner") or {}).get("uid")},
                                        "shard": {"index": (status.get("shard") or {}).get("index")}}}


class Watched:
    """One kind: its engine handler, what was handed over (the ledger), whether it has listed.
    The steps of a listing are here, without I/O; Watches does the requests."""

    def __init__(
        self, kind: Kind, handle: Handle, *, relisted: Callable[[set[str]], None] | None = None,
        on_listed: Callable[[], None] | None = None, tombstone: Callable[[dict[str, Any]], Tombstone] | None = identity,
    ) -> None:
        self.kind, self.handle, self.relisted, self.on_listed = kind, handle, relisted, on_listed
        self.ledger = Ledger(tombstone)
        self.loaded = False  # listed once: what it knows is the cluster's, not a part of it
        self.installed = not kind.optional
        self.last_listing = 0.0  # monotonic
        self.relist_wanted = asyncio.Event()

    def event(self, event: str | None, obj: dict[str, Any]) -> None:
        without_bookkeeping(obj)
        if event is None and self.loaded:
            self.relist_wanted.set()  # kopf is listing again (an expired version): it will not say what went
        if self.ledger.from_watch(event, obj):
            self.handle(event, obj)

    def begin(self, judging: bool) -> None:
        self.ledger.begin_listing(counting=judging and self.loaded)

    def listed(self, obj: dict[str, Any]) -> bool:
        if self.ledger.from_listing(obj):
            self.handle(None, obj)
        return True

    @staticmethod
    def identified(obj: dict[str, Any]) -> bool:
        """An object of a listing of identities: counted as there, nothing handed over."""
        return True

    def end(self, uids: set[str], now: float, version: str = "") -> int:
        """The listing is whole: what it lacks is handed over as deleted. Returns how many."""
        gone = self.ledger.end_listing(uids, now, version)
        if self.relisted is not None:
            self.relisted(set(self.ledger.applied))  # the engine's own step: what it holds and is not listed goes
        else:
            for stone in gone:
                self.handle("DELETED", stone or {})
        first = not self.loaded
        self.loaded = self.installed = True
        self.last_listing = now
        if first and self.on_listed is not None:
            self.on_listed()
        return len(gone)


class Watches:
    def __init__(self, kube: Kube, settings: Settings, watched: list[Watched]) -> None:
        self.kube, self.settings = kube, settings
        self.kinds = {w.kind.name: w for w in watched}
        self.clock = time.monotonic

    def deliver(self, name: str, event: str | None, obj: dict[str, Any]) -> None:
        """kopf's event handler for every kind: the engine sees what is news to it."""
        w = self.kinds.get(name)
        if w is None:
            return
        try:
            w.event(event, obj)
        except Exception as err:  # the engine's handlers never raise; this guards the bookkeeping
            metrics.WATCH_ERRORS.labels(name, "handle").inc()
            log.warning("watch event not handled", resource=name, error=repr(err)[:300])

    async def load(self, name: str) -> bool:
        """The kind's first listing (start-up, or a CRD installed later): True when listed."""
        return await self._list(self.kinds[name], judging=False)

    async def relist(self, name: str, deletions_only: bool = False) -> bool:
        """A later listing: hands over what the watch missed, and what went while it was away.
        `deletions_only`: after kopf's own listing, which handed over every change; the listing
        asks for identities alone and hands over only what went."""
        return await self._list(self.kinds[name], judging=True, identities=deletions_only)

    async def _list(self, w: Watched, judging: bool, identities: bool = False) -> bool:
        relist, missed_before = w.loaded, w.ledger.missed
        w.begin(judging and not identities)  # a listing of identities cannot tell a missed change
        try:
            if identities:
                uids, version = await list_pages(self.kube, w.kind.path, w.identified, accept=METADATA_ONLY)
            else:
                uids, version = await list_pages(self.kube, w.kind.path, w.listed)
        except KubeError as err:
            w.ledger.abandon_listing()
            if w.kind.optional and err.status in (403, 404):
                if w.installed:
                    log.info("optional resource not installed (or not readable); looked for again", resource=w.kind.name)
                w.installed = False
                return False
            raise
        except BaseException:
            w.ledger.abandon_listing()
            raise
        gone = w.end(uids, self.clock(), version)
        missed = w.ledger.missed - missed_before
        if relist:
            metrics.WATCH_RELISTS.labels(w.kind.name).inc()
            metrics.WATCH_MISSED.labels(w.kind.name, "change").inc(missed)
            metrics.WATCH_MISSED.labels(w.kind.name, "deleted").inc(gone)
        if gone or missed:
            log.warning("re-list handed over what the watch had not", resource=w.kind.name, deleted=gone,
                        changed=missed, behind=w.ledger.behind_since is not None, resource_version=version)
        else:
            log.info("listed", resource=w.kind.name, objects=len(uids), resource_version=version)
        return True

    async def reconcile_forever(self, name: str) -> None:
        """Lists the kind again every `reconcile_seconds`, or `relist_gap_seconds` after kopf
        listed it again; an optional kind not yet installed is looked for every minute.
        `reconcile_seconds` 0 switches the re-list off (the look for a CRD stays)."""
        w = self.kinds[name]
        every, gap = self.settings.watching.reconcile_seconds, self.settings.watching.relist_gap_seconds
        while True:
            if not w.loaded:
                await asyncio.sleep(OPTIONAL_RETRY_SECONDS)
                if await self.load(name):
                    log.info("resource installed; watched from now on", resource=name)
                continue
            if every <= 0:
                await asyncio.Event().wait()  # a supervised loop: ending would read as dead
            try:
                await asyncio.wait_for(w.relist_wanted.wait(), timeout=every if w.kind.periodic else None)
            except TimeoutError:
                pass
            await asyncio.sleep(max(0.0, w.last_listing + gap - self.clock()))
            after_kopf = w.relist_wanted.is_set()
            w.relist_wanted.clear()
            await self.relist(name, deletions_only=after_kopf)

    def problems(self, stale_seconds: float) -> list[str]:
        now = self.clock()
        found = []
        for name, w in self.kinds.items():
            behind = w.ledger.behind_for(now)
            metrics.WATCH_BEHIND.labels(name).set(behind)
            if behind > stale_seconds:
                found.append(f"watch {name} behind for {behind:.0f}s: a re-list found changes it never sent "
                             f"(bound {stale_seconds:.0f}s)")
        return found


def for_runtime(rt: Runtime, kube: Kube) -> Watches:
    """Every kopf-watched kind, wired to the engine's handlers."""
    c = rt.cluster
    handles: dict[str, Handle] = {
        "namespaces": c.observe_namespace, "replicasets": c.observe_replicaset, "nodes": c.observe_node,
        "hypernodes": c.observe_hypernode, "podgroups": c.observe_podgroup,
        "leaderworkersets": LeaderWorkerSets(c.workloads.frameworks), "jobsets": JobSets(c.workloads.frameworks),
    }
    watched = [Watched(k, handles[k.name], on_listed=getattr(handles[k.name], "on_listed", None)) for k in CLUSTER_KINDS]
    watched.append(Watched(MEMORY, lambda t, o: memory_event(rt, t, o), tombstone=memory_tombstone))
    watched.append(Watched(PODS, rt.pods.observe, relisted=rt.pods.relisted, tombstone=None))
    return Watches(kube, rt.settings, watched)


def memory_event(rt: Runtime, event: str | None, body: dict[str, Any]) -> None:
    """Deleted by garbage collection (owner gone) or by hand (reset): forget it too."""
    key = primary_owner_key(body) if event == "DELETED" else None  # shards 2.. come and go with the owner's size
    if key is not None and rt.index.forget(key) is not None:
        if rt.store is not None:
            rt.store.forgotten(key)
        log.info("memory dropped with its PlacementMemory", owner_key=key, name=(body.get("metadata") or {}).get("name"))


def _register(kind: Kind) -> None:
    async def on_event(type: str | None, event: kopf.RawEvent, memo: kopf.Memo, **_: object) -> None:
        watches: Watches | None = getattr(memo, "watches", None)
        if watches is not None:  # set by the start-up handler, before kopf starts watching
            watches.deliver(kind.name, type, cast(dict[str, Any], event["object"]))

    kopf.on.event(kind.group, kind.version, kind.plural, id=f"watch-{kind.name}")(on_event)


for _kind in KINDS:
    _register(_kind)
