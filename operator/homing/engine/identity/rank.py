"""SPEC 1.2: which member of its workload a pod is. First matching source wins."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from homing.engine.model import Rank

HCCL_RANK = "hccl/rankIndex"
VOLCANO_TASK_INDEX = "volcano.sh/task-index"
VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
STATEFULSET_POD_INDEX = "apps.kubernetes.io/pod-index"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"

_ORDINAL = re.compile(r"-(\d+)$")


@dataclass(frozen=True, slots=True)
class RankResult:
    rank: Rank | None
    warning: str | None = None


class _BadRank(ValueError):
    pass


def _part(value: object, what: str, bound: int) -> int:
    """A rank part: a non-negative integer below `bound`, written in decimal digits."""
    text = str(value).strip()
    if not text.isascii() or not text.isdigit():
        raise _BadRank(f"{what}={value!r} is not a non-negative integer")
    number = int(text)
    if number >= bound:
        raise _BadRank(f"{what}={value!r} is not below the bound {bound}")
    return number


def _meta_value(meta: dict, key: str) -> str | None:
    """Annotation first, then label."""
    for where in ("annotations", "labels"):
        value = (meta.get(where) or {}).get(key)
        if value is not None:
            return value
    return None


def _hccl(meta: dict, owner_kind: str, bound: int) -> Rank | None:
    value = (meta.get("annotations") or {}).get(HCCL_RANK)
    if value is None:
        return None
    index = _part(value, HCCL_RANK, bound)
    return Rank(key=str(index), index=index, source="hccl")


def _volcano(meta: dict, owner_kind: str, bound: int) -> Rank | None:
    value = _meta_value(meta, VOLCANO_TASK_INDEX)
    if value is None:
        return None
    index = _part(value, VOLCANO_TASK_INDEX, bound)
    spec = (meta.get("annotations") or {}).get(VOLCANO_TASK_SPEC)
    key = f"{spec}/{index}" if spec else str(index)
    return Rank(key=key, index=index, source="volcano")


def _indexed_job(meta: dict, owner_kind: str, bound: int) -> Rank | None:
    value = _meta_value(meta, JOB_COMPLETION_INDEX)
    if value is None:
        return None
    index = _part(value, JOB_COMPLETION_INDEX, bound)
    return Rank(key=str(index), index=index, source="indexed-job")


def _statefulset(meta: dict, owner_kind: str, bound: int) -> Rank | None:
    if owner_kind != "StatefulSet":
        return None  # a name ending in -3 means nothing for other owners
    value = (meta.get("labels") or {}).get(STATEFULSET_POD_INDEX)
    if value is None:
        match = _ORDINAL.search(meta.get("name") or "")
        if match is None:
            return None
        value = match.group(1)
    index = _part(value, STATEFULSET_POD_INDEX, bound)
    return Rank(key=str(index), index=index, source="statefulset")


def _leaderworkerset(meta: dict, owner_kind: str, bound: int) -> Rank | None:
    labels = meta.get("labels") or {}
    group, worker = labels.get(LWS_GROUP_INDEX), labels.get(LWS_WORKER_INDEX)
    if group is None and worker is None:
        return None
    g = _part(group, LWS_GROUP_INDEX, bound)
    w = _part(worker, LWS_WORKER_INDEX, bound)
    return Rank(key=f"{g}/{w}", index=w, source="leaderworkerset")


RANK_SOURCES: tuple[Callable[[dict, str, int], Rank | None], ...] = (
    _hccl,
    _volcano,
    _indexed_job,
    _statefulset,
    _leaderworkerset,
)


def resolve_rank(pod: dict, owner_kind: str, bound: int) -> RankResult:
    """The pod's rank, or a rankless result (with a warning when a source was malformed)."""
    meta = pod.get("metadata") or {}
    for source in RANK_SOURCES:
        try:
            rank = source(meta, owner_kind, bound)
        except _BadRank as bad:
            return RankResult(None, f"rank ignored, pod treated as rankless: {bad}")
        if rank is not None:
            return RankResult(rank)
    return RankResult(None)
