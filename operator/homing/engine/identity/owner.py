"""SPEC 1.1: the owner is the pod's controller, lifted from a ReplicaSet to its Deployment."""
from __future__ import annotations

from dataclasses import dataclass, field

from homing.engine.model import OwnerRef

POD_TEMPLATE_HASH = "pod-template-hash"


@dataclass(slots=True)
class WorkloadIndex:
    """What the ReplicaSet watch has taught: each ReplicaSet's controller (None when it
    has none) and Deployments by (namespace, name) for ReplicaSets not seen yet."""

    replicaset_owner: dict[str, OwnerRef | None] = field(default_factory=dict)
    deployments: dict[tuple[str, str], OwnerRef] = field(default_factory=dict)

    def learn_replicaset(self, rs_uid: str, controller: OwnerRef | None) -> None:
        self.replicaset_owner[rs_uid] = controller
        if controller is not None and controller.kind == "Deployment":
            self.deployments[(controller.namespace, controller.name)] = controller

    def forget_replicaset(self, rs_uid: str) -> None:
        self.replicaset_owner.pop(rs_uid, None)


def controller_ref(meta: dict, namespace: str) -> OwnerRef | None:
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


def resolve_owner(pod: dict, workloads: WorkloadIndex) -> OwnerRef | None:
    """The workload that outlives the pod, or None: such a pod is not tracked."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    controller = controller_ref(meta, namespace)
    if controller is None or controller.kind != "ReplicaSet":
        return controller
    if controller.uid in workloads.replicaset_owner:
        return workloads.replicaset_owner[controller.uid] or controller
    # A brand-new ReplicaSet the watch has not delivered yet: name minus "-<hash>".
    pod_hash = (meta.get("labels") or {}).get(POD_TEMPLATE_HASH)
    suffix = f"-{pod_hash}"
    if pod_hash and controller.name.endswith(suffix):
        deployment = workloads.deployments.get((namespace, controller.name[: -len(suffix)]))
        if deployment is not None:
            return deployment
    return controller
