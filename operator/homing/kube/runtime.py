"""Everything one operator process knows, composed: the memory index, the cluster state,
the pod watch's adapter and the admission side. Handlers call into these; each takes
plain dicts and never raises."""
from __future__ import annotations

from homing.config import Settings
from homing.engine.memory.image_runs import ImageRuns
from homing.engine.memory.index import MemoryIndex
from homing.kube.admission.admitter import Admitter
from homing.kube.signals.events import EventPoster
from homing.kube.state.cluster import ClusterState
from homing.kube.state.pods import PodObserver
from homing.kube.store.store import Store
from homing.kube.store.upkeep import forget_namespace


class Runtime:
    def __init__(self, settings: Settings, store: Store | None = None, events: EventPoster | None = None) -> None:
        self.settings = settings
        self.store = store
        self.index = MemoryIndex(max_ranks_per_owner=settings.bounds.max_ranks_per_owner,
                                 restart_hold=settings.lifetimes.restart_hold_seconds,
                                 images=ImageRuns(max_runs=settings.bounds.max_image_runs))
        self.cluster = ClusterState(settings, on_namespace_gone=lambda ns: forget_namespace(self.index, store, ns))
        self.pods = PodObserver(settings, self.index, self.cluster, events)
        self.admitter = Admitter(settings, self.index, self.cluster)

    def owns_namespace(self, namespace: str) -> bool:
        """Whether this operator remembers owners there: any namespace, unless it is a shard
        (no per-pod opt-in), which owns only the namespaces its scope selects."""
        return self.settings.scope.pod_opt_in or namespace in self.cluster.opted_in
