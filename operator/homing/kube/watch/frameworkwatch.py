"""The LeaderWorkerSet and JobSet watches (behaviour.md "Identity"): what lifts a framework's pods to
the workload that outlives them. Each is optional, like Volcano's: a cluster without the
CRD has no such pods. A cache counts as live once its watch has listed, so that a pod
whose framework object the cache lacks is told apart from a cluster without the CRD."""
from __future__ import annotations

from typing import Any

from homing.engine.identity.frameworks import JOBSET_KIND, LWS_KIND, FrameworkIndex
from homing.engine.identity.owner import controller_ref
from homing.engine.model import OwnerRef
from homing.kube.signals import logs
from homing.kube.state.cluster import never_raises

log = logs.get("homing.frameworks")

LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets"
JOBSET_PATH = "/apis/jobset.x-k8s.io/v1alpha2/jobsets"


def _ref(obj: dict[str, Any], api_version: str, kind: str) -> OwnerRef | None:
    meta = obj.get("metadata") or {}
    if not meta.get("uid") or not meta.get("name"):
        return None
    return OwnerRef(
        api_version=str(obj.get("apiVersion") or api_version), kind=kind,
        name=str(meta["name"]), namespace=str(meta.get("namespace") or ""), uid=str(meta["uid"]),
    )


class _Watch:
    """Watch handler for one kind: learns and forgets its objects, says when it has listed."""

    kind = ""
    api_version = ""  # when an object lacks its own

    def __init__(self, index: FrameworkIndex) -> None:
        self.index = index

    @never_raises
    def __call__(self, event: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if event == "DELETED":
            self.forget(meta)
            return
        ref = _ref(obj, self.api_version, self.kind)
        if ref is not None:
            self.learn(ref, meta)

    def on_listed(self) -> None:
        if self.kind not in self.index.live:
            log.info("pods of this kind are kept under it from now on", kind=self.kind)
        self.index.live.add(self.kind)

    def learn(self, ref: OwnerRef, meta: dict[str, Any]) -> None:
        raise NotImplementedError

    def forget(self, meta: dict[str, Any]) -> None:
        raise NotImplementedError


class LeaderWorkerSets(_Watch):
    """LeaderWorkerSets by name, for their pods' name label."""

    kind, api_version = LWS_KIND, "leaderworkerset.x-k8s.io/v1"

    def learn(self, ref: OwnerRef, meta: dict[str, Any]) -> None:
        self.index.learn_leaderworkerset(ref)

    def forget(self, meta: dict[str, Any]) -> None:
        self.index.forget_leaderworkerset(meta.get("namespace") or "", meta.get("name") or "", meta.get("uid"))


class JobSets(_Watch):
    """JobSets by UID, and the TrainJob that owns each, if one does."""

    kind, api_version = JOBSET_KIND, "jobset.x-k8s.io/v1alpha2"

    def learn(self, ref: OwnerRef, meta: dict[str, Any]) -> None:
        self.index.learn_jobset(ref, controller_ref(meta, ref.namespace))

    def forget(self, meta: dict[str, Any]) -> None:
        self.index.forget_jobset(meta.get("namespace") or "", meta.get("uid"))
