"""The LeaderWorkerSet and JobSet watches (SPEC 1.1.2): what lifts a framework's pods to
the workload that outlives them. Each is optional, like Volcano's: a cluster without the
CRD has no such pods. A cache counts as live once its watch has listed, so that a pod
whose framework object the cache lacks is told apart from a cluster without the CRD."""
from __future__ import annotations

from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND, FrameworkIndex
from homing.engine.identity.owner import controller_ref
from homing.engine.model import OwnerRef
from homing.operator import logs
from homing.operator.cluster import never_raises

log = logs.get("homing.frameworks")

LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets"
JOBSET_PATH = "/apis/jobset.x-k8s.io/v1alpha2/jobsets"


def _ref(obj: dict, api_version: str, kind: str) -> OwnerRef | None:
    meta = obj.get("metadata") or {}
    if not meta.get("uid") or not meta.get("name"):
        return None
    return OwnerRef(
        api_version=str(obj.get("apiVersion") or api_version), kind=kind,
        name=str(meta["name"]), namespace=str(meta.get("namespace") or ""), uid=str(meta["uid"]),
    )


class LeaderWorkerSets:
    """Watch handler: LeaderWorkerSets by name, for their pods' name label."""

    def __init__(self, index: FrameworkIndex) -> None:
        self.index = index

    @never_raises
    def __call__(self, event: str | None, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        if event == "DELETED":
            self.index.forget_leaderworkerset(meta.get("namespace") or "", meta.get("name") or "", meta.get("uid"))
            return
        ref = _ref(obj, "leaderworkerset.x-k8s.io/v1", LWS_KIND)
        if ref is not None:
            self.index.learn_leaderworkerset(ref)

    def on_listed(self) -> None:
        if LWS_KIND not in self.index.live:
            log.info("LeaderWorkerSet pods are kept under their LeaderWorkerSet from now on")
        self.index.live.add(LWS_KIND)


class JobSets:
    """Watch handler: JobSets by UID and the TrainJob that owns each, if one does."""

    def __init__(self, index: FrameworkIndex) -> None:
        self.index = index

    @never_raises
    def __call__(self, event: str | None, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        if event == "DELETED":
            self.index.forget_jobset(meta.get("uid"))
            return
        ref = _ref(obj, "jobset.x-k8s.io/v1alpha2", JOBSET_KIND)
        if ref is not None:
            self.index.learn_jobset(ref, controller_ref(meta, ref.namespace))

    def on_listed(self) -> None:
        if JOBSET_KIND not in self.index.live:
            log.info("JobSet pods are kept under their JobSet (or its TrainJob) from now on")
        self.index.live.add(JOBSET_KIND)
