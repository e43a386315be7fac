"""What the memory needs to know of a pod event, read from the raw pod."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from homing.engine.cluster.images import pod_images
from homing.engine.identity import RankResult, WorkloadIndex, resolve_owner, resolve_rank
from homing.engine.identity.generation import pod_generation
from homing.engine.identity.rank import rank_as_admitted
from homing.engine.identity.scope import DECISION_ANNOTATION, HOME_ANNOTATION
from homing.engine.model import OwnerRef

# Pod or DisruptionTarget reasons that mean the node, not the workload, failed.
FAULT_REASONS = frozenset({"NodeLost", "DeletionByTaintManager", "UnexpectedAdmissionError"})


@dataclass(frozen=True, slots=True)
class PodView:
    uid: str
    name: str
    namespace: str
    owner: OwnerRef
    rank: RankResult
    node: str | None  # the node it holds: placed_node()
    running: bool
    ended: bool
    terminating: bool
    fault_reason: str | None
    home: str | None
    domains: tuple[tuple[str, str], ...] = ()  # the block domains the decision preferred
    images: tuple[str, ...] = ()  # its containers' images, normalised (engine/cluster/images.py)
    prefer: tuple[str, ...] = ()  # behaviour.md "Beyond the home" preferences its decision used
    generation: int | None = None  # its workload's restart it belongs to, when its controller says (identity/generation.py)
    unplaced: bool = False  # names a node (spec.nodeName) it does not hold: it waits for no scheduler either


def _decided(annotations: dict[str, Any], field: str) -> list[Any]:
    """One list field of the decision annotation; empty when unreadable."""
    try:
        value = json.loads(annotations.get(DECISION_ANNOTATION) or "{}").get(field)
    except (ValueError, AttributeError, TypeError):
        return []
    return value if isinstance(value, list) else []


def decided_prefer(annotations: dict[str, Any]) -> tuple[str, ...]:
    return tuple(p for p in _decided(annotations, "prefer") if isinstance(p, str))


def decided_domains(annotations: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """("superPod", "5") pairs from the decision annotation; nothing when unreadable."""
    names = _decided(annotations, "domains")
    if not names:
        return ()
    pairs = (str(n).split("=", 1) for n in names if isinstance(n, str) and "=" in n)
    return tuple((level, value) for level, value in pairs if level and value)


def _dict(value: object) -> dict[str, Any]:
    """An object field as a dict; anything else (missing, a list, a string) counts as empty."""
    return value if isinstance(value, dict) else {}


def _listed(status: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A list field of the pod's status, its well-formed entries only."""
    value = status.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _started(status: dict[str, Any]) -> bool:
    for cs in _listed(status, "containerStatuses"):
        state = _dict(cs.get("state"))
        if cs.get("started") or "running" in state or "terminated" in state:
            return True
    return False


def _fault_reason(status: dict[str, Any]) -> str | None:
    reason: str | None = status.get("reason")
    if reason in FAULT_REASONS:
        return reason
    for cond in _listed(status, "conditions"):
        verdict: str | None = cond.get("reason")
        if cond.get("type") == "DisruptionTarget" and verdict in FAULT_REASONS:
            return verdict
    return None


def placed_node(pod: dict[str, Any]) -> str | None:
    """The node the pod holds (behaviour.md "Tenants"): its spec.nodeName once its status shows
    a scheduler bound it there or its kubelet took it, else None.

    Shown by the PodScheduled condition True (written with spec.nodeName by the API server's
    binding, which every scheduler uses, and by the kubelet of a pod created naming its
    node), phase Running or Succeeded, container statuses (the kubelet's), or a node-fault
    verdict (FAULT_REASONS: the kubelet's or the node controllers', on a pod of that node; a
    kubelet that rejects a pod rewrites its status without PodScheduled). A pod's status
    cannot be written at its creation (the API server resets it), so a pod created naming a
    node that does not exist, or whose kubelet never took it, shows none of these. Failed
    alone is not enough: the pod garbage collector writes it on pods of nodes that are gone."""
    spec = pod.get("spec") or {}
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    if not node or not isinstance(node, str):
        return None
    status = _dict(pod.get("status"))
    scheduled = any(c.get("type") == "PodScheduled" and c.get("status") == "True" for c in _listed(status, "conditions"))
    ran = status.get("phase") in ("Running", "Succeeded") or bool(_listed(status, "containerStatuses"))
    return node if scheduled or ran or _fault_reason(status) is not None else None


_UNDECIDED = object()


def _decided_rank(annotations: dict[str, Any]) -> object:
    """The rank key the decision annotation recorded (None: rankless), or _UNDECIDED when the
    pod carries no readable decision (admitted before homing, or out of its scope)."""
    try:
        record = json.loads(annotations.get(DECISION_ANNOTATION) or "null")
    except (ValueError, TypeError):
        return _UNDECIDED
    if not isinstance(record, dict) or "rank" not in record:
        return _UNDECIDED
    rank = record["rank"]
    return rank if rank is None or isinstance(rank, str) else _UNDECIDED


def _rank(pod: dict[str, Any], owner_kind: str, max_rank_part: int) -> RankResult:
    decided = _decided_rank((pod.get("metadata") or {}).get("annotations") or {})
    if decided is _UNDECIDED:
        return resolve_rank(pod, owner_kind, max_rank_part)
    return rank_as_admitted(pod, owner_kind, max_rank_part, decided)  # type: ignore[arg-type]


def pod_view(pod: dict[str, Any], workloads: WorkloadIndex, max_rank_part: int) -> PodView | None:
    """None for a pod homing does not track (no controller, no uid)."""
    meta = pod.get("metadata") or {}
    owner = resolve_owner(pod, workloads)
    if owner is None or not meta.get("uid"):
        return None
    status = pod.get("status") or {}
    phase = status.get("phase")
    node = placed_node(pod)
    return PodView(
        uid=meta["uid"],
        name=meta.get("name") or "",
        namespace=meta.get("namespace") or "",
        owner=owner,
        rank=_rank(pod, owner.kind, max_rank_part),
        node=node,
        running=phase == "Running" or _started(status),
        ended=phase in ("Succeeded", "Failed"),
        terminating=bool(meta.get("deletionTimestamp")),
        fault_reason=_fault_reason(status),
        home=(meta.get("annotations") or {}).get(HOME_ANNOTATION),
        domains=decided_domains(meta.get("annotations") or {}),
        images=pod_images(pod),
        prefer=decided_prefer(meta.get("annotations") or {}),
        generation=pod_generation(pod).value,
        unplaced=node is None and bool((pod.get("spec") or {}).get("nodeName")),
    )
