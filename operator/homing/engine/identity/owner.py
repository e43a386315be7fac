"""behaviour.md "Identity": the owner is the pod's controller, lifted from a ReplicaSet to its Deployment,
and from a framework's intermediate objects to the framework's workload (frameworks.py).

Every lookup is made in the pod's own namespace: an ownerReference carries no namespace
(the API server reads it as the referrer's), so a pod of B naming the UID of A's
ReplicaSet must find nothing; keyed by UID alone it was lifted to A's Deployment, read
A's homes and wrote its own node into A's memory."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from homing.engine.identity.frameworks import FrameworkIndex, lift
from homing.engine.model import OwnerRef

POD_TEMPLATE_HASH = "pod-template-hash"

NameKey = tuple[str, str]  # (namespace, name)
UidKey = tuple[str, str]  # (namespace, uid)


def _deployment(controller: OwnerRef | None) -> OwnerRef | None:
    return controller if controller is not None and controller.kind == "Deployment" else None


def _name_key(ref: OwnerRef) -> NameKey:
    return (ref.namespace, ref.name)


@dataclass(slots=True)
class WorkloadIndex:
    """What the ReplicaSet watch has taught: each ReplicaSet's controller (None when it
    has none), by the ReplicaSet's namespace and UID, and, for ReplicaSets not seen yet,
    the Deployment of each name.

    A Deployment is known only while one of its ReplicaSets is: delete a Deployment and
    recreate it under the same name, and the new one's pods must not key on the old UID."""

    replicaset_owner: dict[UidKey, OwnerRef | None] = field(default_factory=dict)
    deployments: dict[NameKey, OwnerRef] = field(default_factory=dict)
    # Deployment name -> Deployment uid -> its known ReplicaSets (a set: watch updates repeat).
    replicasets: dict[NameKey, dict[str, set[UidKey]]] = field(default_factory=dict)
    frameworks: FrameworkIndex = field(default_factory=FrameworkIndex)  # LeaderWorkerSets, JobSets

    def learn_replicaset(self, namespace: str, rs_uid: str, controller: OwnerRef | None) -> None:
        """`controller`: the ReplicaSet's, read in `namespace` (owner.controller_ref); one
        of another namespace cannot control it and is not followed."""
        if controller is not None and controller.namespace != namespace:
            controller = None
        rs = (namespace, rs_uid)
        if rs in self.replicaset_owner and self.replicaset_owner[rs] == controller:
            return  # an update of a known ReplicaSet must not bring back a Deployment since replaced
        self._unlink(rs)
        self.replicaset_owner[rs] = controller
        deployment = _deployment(controller)
        if deployment is not None:
            key = _name_key(deployment)
            self.replicasets.setdefault(key, {}).setdefault(deployment.uid, set()).add(rs)
            # A ReplicaSet seen for the first time belongs to the current Deployment of its name.
            self.deployments[key] = deployment

    def forget_replicaset(self, namespace: str, rs_uid: str | None) -> None:
        if rs_uid is None:
            return
        self._unlink((namespace, rs_uid))
        self.replicaset_owner.pop((namespace, rs_uid), None)

    def _unlink(self, rs_uid: UidKey) -> None:
        """Drop `rs_uid` from its Deployment's count; forget a Deployment left with none."""
        deployment = _deployment(self.replicaset_owner.get(rs_uid))
        if deployment is None:
            return
        key = _name_key(deployment)
        by_uid = self.replicasets.get(key, {})
        members = by_uid.get(deployment.uid, set())
        members.discard(rs_uid)
        if members:
            return
        by_uid.pop(deployment.uid, None)
        if not by_uid:
            self.replicasets.pop(key, None)
        cached = self.deployments.get(key)
        if cached is not None and cached.uid == deployment.uid:
            survivor = self._any_deployment_named(key)
            if survivor is None:
                self.deployments.pop(key, None)
            else:
                self.deployments[key] = survivor

    def _any_deployment_named(self, key: NameKey) -> OwnerRef | None:
        """A Deployment of that name that still has a known ReplicaSet (after a restart
        listed a dying one last), read from one of its ReplicaSets."""
        for members in self.replicasets.get(key, {}).values():
            return self.replicaset_owner.get(next(iter(members)))
        return None


def controller_ref(meta: dict[str, Any], namespace: str) -> OwnerRef | None:
    """The ownerReference marked controller: true, if there is one and it is well formed."""
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if not isinstance(ref, dict) or not ref.get("controller"):
            continue
        if not ref.get("uid") or not ref.get("name") or not ref.get("kind"):
            return None
        try:
            return OwnerRef(
                api_version=str(ref["apiVersion"]),
                kind=str(ref["kind"]),
                name=str(ref["name"]),
                namespace=namespace,
                uid=str(ref["uid"]),
            )
        except KeyError:
            return None
    return None


def resolve_owner(pod: dict[str, Any], workloads: WorkloadIndex) -> OwnerRef | None:
    """The workload that outlives the pod, or None: such a pod is not tracked. Always one
    of the pod's namespace (behaviour.md "Identity")."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    controller = controller_ref(meta, namespace)
    if controller is None:
        return None
    if controller.kind != "ReplicaSet":
        labels = meta.get("labels")
        owner = lift(labels if isinstance(labels, dict) else {}, controller, workloads.frameworks)
    else:
        owner = _replicaset_owner(meta, controller, workloads)
    # Every cache is read by the pod's namespace; should one ever answer with another's
    # object, the pod still keys on nothing outside its namespace: its controller as it is.
    return owner if owner is None or owner.namespace == namespace else controller


def _replicaset_owner(meta: dict[str, Any], controller: OwnerRef, workloads: WorkloadIndex) -> OwnerRef:
    """A ReplicaSet not known in the pod's namespace (not delivered yet, or another
    namespace's UID) is taken as a brand-new one: the Deployment of its name, else itself."""
    namespace = controller.namespace
    if (namespace, controller.uid) in workloads.replicaset_owner:
        return workloads.replicaset_owner[(namespace, controller.uid)] or controller
    # A brand-new ReplicaSet the watch has not delivered yet: name minus "-<hash>".
    pod_hash = (meta.get("labels") or {}).get(POD_TEMPLATE_HASH)
    suffix = f"-{pod_hash}"
    if pod_hash and controller.name.endswith(suffix):
        deployment = workloads.deployments.get((namespace, controller.name[: -len(suffix)]))
        if deployment is not None:
            return deployment
    return controller
