"""behaviour.md "Identity": lifting a pod of LeaderWorkerSet or JobSet (and TrainJob) to the workload
that outlives its intermediate objects, from what the LeaderWorkerSet and JobSet watches
taught. Which lift applies is read from the labels those controllers write on their pods.

A cache that is live (its watch has listed once) but lacks the object leaves the pod
untracked for that event: the next event of the pod finds it, and nothing is remembered
under a key a group restart would throw away. A cache that is not live (CRD absent, no
permission) stops the lift where the pod's own metadata still says who owns it.

Every cache is keyed and read by the pod's namespace: labels naming another namespace's
object find nothing, as for one the watch has not delivered (behaviour.md "Identity")."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homing.engine.model import OwnerRef

LWS_KIND = "LeaderWorkerSet"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
JOBSET_KIND = "JobSet"
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"  # what the label fallback names; the cache keeps the object's own
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
TRAINJOB_KIND = "TrainJob"
TRAINJOB_GROUP = "trainer.kubeflow.org"

NameKey = tuple[str, str]  # (namespace, name)
UidKey = tuple[str, str]  # (namespace, uid)


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _label(labels: dict[str, Any], key: str) -> str | None:
    value = labels.get(key)
    return value if isinstance(value, str) and value else None


@dataclass(slots=True)
class FrameworkIndex:
    """LeaderWorkerSets by name, JobSets by UID with their TrainJob (None when a JobSet
    has no TrainJob controller), each in its namespace, and which of the two watches is live."""

    leaderworkersets: dict[NameKey, OwnerRef] = field(default_factory=dict)
    jobsets: dict[UidKey, OwnerRef] = field(default_factory=dict)
    trainjobs: dict[UidKey, OwnerRef | None] = field(default_factory=dict)  # JobSet -> its TrainJob
    live: set[str] = field(default_factory=set)  # kinds whose watch has listed

    def learn_leaderworkerset(self, lws: OwnerRef) -> None:
        self.leaderworkersets[(lws.namespace, lws.name)] = lws

    def forget_leaderworkerset(self, namespace: str, name: str, uid: str | None) -> None:
        cached = self.leaderworkersets.get((namespace, name))
        if cached is not None and (uid is None or cached.uid == uid):  # not one recreated since
            del self.leaderworkersets[(namespace, name)]

    def learn_jobset(self, jobset: OwnerRef, controller: OwnerRef | None) -> None:
        """`controller`: the JobSet's; a TrainJob of another namespace cannot control it."""
        key = (jobset.namespace, jobset.uid)
        self.jobsets[key] = jobset
        is_trainjob = (controller is not None and controller.kind == TRAINJOB_KIND
                       and _group(controller.api_version) == TRAINJOB_GROUP and controller.namespace == jobset.namespace)
        self.trainjobs[key] = controller if is_trainjob else None

    def forget_jobset(self, namespace: str, uid: str | None) -> None:
        if uid is not None:
            self.jobsets.pop((namespace, uid), None)
            self.trainjobs.pop((namespace, uid), None)


def _leaderworkerset(labels: dict[str, Any], controller: OwnerRef, index: FrameworkIndex) -> OwnerRef | None:
    """A leader pod's controller is the leader StatefulSet, a worker's the group's StatefulSet
    owned by the leader pod: both give way to the LeaderWorkerSet the label names."""
    name = _label(labels, LWS_NAME)
    if LWS_KIND not in index.live:
        return controller
    return index.leaderworkersets.get((controller.namespace, name or ""))


def _jobset(labels: dict[str, Any], controller: OwnerRef, index: FrameworkIndex) -> OwnerRef | None:
    """The JobSet controller writes its name and UID on every Job's pod template, so no Job
    watch is needed (a cluster holds far more Jobs than JobSets); the JobSet watch confirms
    them and says whether a TrainJob owns the JobSet."""
    name, uid = _label(labels, JOBSET_NAME), _label(labels, JOBSET_UID)
    if name is None or uid is None:
        return controller
    if JOBSET_KIND not in index.live:
        return OwnerRef(api_version=JOBSET_API_VERSION, kind=JOBSET_KIND, name=name, namespace=controller.namespace, uid=uid)
    key = (controller.namespace, uid)
    jobset = index.jobsets.get(key)
    if jobset is None or jobset.name != name:
        return None  # not seen yet (in this namespace: another's UID finds nothing), or another name's
    return index.trainjobs.get(key) or jobset


def lift(labels: dict[str, Any], controller: OwnerRef, index: FrameworkIndex) -> OwnerRef | None:
    """The owner a framework's pod is kept under; `controller` when no framework applies."""
    if controller.kind == "StatefulSet" and _label(labels, LWS_NAME):
        return _leaderworkerset(labels, controller, index)
    if controller.kind == "Job" and _group(controller.api_version) == "batch" and _label(labels, JOBSET_NAME):
        return _jobset(labels, controller, index)
    return controller
