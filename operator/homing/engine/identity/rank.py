"""behaviour.md "Identity": which member of its workload a pod is. First matching source wins.

Any metadata gives either a Rank or a rankless result; a malformed source gives a
warning that names the value (shortened), never an exception."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from homing.engine.model import Rank

HCCL_RANK = "hccl/rankIndex"
VOLCANO_TASK_INDEX = "volcano.sh/task-index"
VOLCANO_TASK_SPEC = "volcano.sh/task-spec"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
STATEFULSET_POD_INDEX = "apps.kubernetes.io/pod-index"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
JOBSET_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
KUBEFLOW_REPLICA_INDEX = "training.kubeflow.org/replica-index"

MAX_KEY_LENGTH = 63  # behaviour.md "Identity": a rank key (and so each of its parts) is at most 63 characters
SHOWN_LENGTH = 40  # how much of a bad value a warning quotes

_ORDINAL = re.compile(r"-([0-9]+)$")  # ASCII only: \d would also match other scripts' digits


def is_decimal(text: object) -> bool:
    """A non-empty string of ASCII digits 0-9 only: safe for int(), unlike str.isdigit()
    (True for "²", which int() refuses) or int() alone (which takes " 3", "+3", "3_0")."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def shown(value: object) -> str:
    """A value as a warning quotes it: repr, cut to SHOWN_LENGTH with its full length said,
    so a 100 kB annotation is named but not copied into an Event."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= SHOWN_LENGTH:
        return repr(text)
    return f"{text[:SHOWN_LENGTH]!r}... ({len(text)} characters)"


@dataclass(frozen=True, slots=True)
class RankResult:
    rank: Rank | None
    warning: str | None = None


class _BadRank(ValueError):
    pass


def _part(value: object, what: str, bound: int) -> int:
    """A rank part: a non-negative integer below `bound`, written in ASCII decimal digits
    ("05" is 5), with nothing around them."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > MAX_KEY_LENGTH:  # checked before int(): Python refuses 4,301 digits with ValueError
        raise _BadRank(f"{what}={shown(value)} is longer than {MAX_KEY_LENGTH} characters")
    if not is_decimal(text):
        raise _BadRank(f"{what}={shown(value)} is not a non-negative integer in plain digits")
    number = int(text)
    if number >= bound:
        raise _BadRank(f"{what}={shown(value)} is not below the bound {bound}")
    return number


def _mapping(value: object) -> dict[str, Any]:
    """Metadata fields as dicts; anything else (a list, a string) counts as empty."""
    return value if isinstance(value, dict) else {}


def _meta_value(meta: dict[str, Any], key: str) -> object | None:
    """Annotation first, then label."""
    for where in ("annotations", "labels"):
        value: object = _mapping(meta.get(where)).get(key)
        if value is not None:
            return value
    return None


def _hccl(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    value = _mapping(meta.get("annotations")).get(HCCL_RANK)
    if value is None:
        return None
    index = _part(value, HCCL_RANK, bound)
    return Rank(key=str(index), index=index, source="hccl")


def _volcano(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    value = _meta_value(meta, VOLCANO_TASK_INDEX)
    if value is None:
        return None
    index = _part(value, VOLCANO_TASK_INDEX, bound)
    spec = _mapping(meta.get("annotations")).get(VOLCANO_TASK_SPEC)
    key = f"{spec}/{index}" if spec else str(index)
    if len(key) > MAX_KEY_LENGTH:  # a long task-spec would go into every rank key and PlacementMemory
        raise _BadRank(
            f"{VOLCANO_TASK_SPEC}={shown(spec)} makes the rank key {len(key)} characters, more than {MAX_KEY_LENGTH}"
        )
    return Rank(key=key, index=index, source="volcano")


def _indexed_job(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    value = _meta_value(meta, JOB_COMPLETION_INDEX)
    if value is None:
        return None
    index = _part(value, JOB_COMPLETION_INDEX, bound)
    return Rank(key=str(index), index=index, source="indexed-job")


def _ordinal(meta: dict[str, Any]) -> object | None:
    """A StatefulSet pod's ordinal: its pod-index label, else its name's suffix."""
    value = _mapping(meta.get("labels")).get(STATEFULSET_POD_INDEX)
    if value is None:
        name = meta.get("name")
        match = _ORDINAL.search(name) if isinstance(name, str) else None
        value = match.group(1) if match else None
    return value


def _statefulset(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    if owner_kind != "StatefulSet":
        return None  # a name ending in -3 means nothing for other owners
    value = _ordinal(meta)
    if value is None:
        return None
    index = _part(value, STATEFULSET_POD_INDEX, bound)
    return Rank(key=str(index), index=index, source="statefulset")


def _leaderworkerset(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    """`<group>/<worker>`. LWS's own pod webhook writes the index its pod lacks from the
    StatefulSet ordinal (a leader's group, a worker's index) and may run after homing's,
    so a missing index is read the same way."""
    labels = _mapping(meta.get("labels"))
    group, worker = labels.get(LWS_GROUP_INDEX), labels.get(LWS_WORKER_INDEX)
    if group is None and worker is None:
        if labels.get(LWS_NAME) is None:
            return None
        raise _BadRank(f"{LWS_NAME}={shown(labels[LWS_NAME])} without {LWS_GROUP_INDEX} or {LWS_WORKER_INDEX}")
    if group is None:
        group = _ordinal(meta)  # a leader (worker 0) before LWS's webhook: its ordinal is the group
    elif worker is None:
        worker = _ordinal(meta)  # a worker before LWS's webhook: its ordinal is its index
    g = _part(group, LWS_GROUP_INDEX, bound)
    w = _part(worker, LWS_WORKER_INDEX, bound)
    return Rank(key=f"{g}/{w}", index=w, source="leaderworkerset")


def _named(value: object, what: str) -> str:
    """The name part of a rank key: a non-empty string without the key's separator."""
    if not isinstance(value, str) or not value or "/" in value:
        raise _BadRank(f"{what}={shown(value)} is not a name")
    return value


def _jobset(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    """`<replicatedjob>/<job>/<completion index>`: before Indexed Job, whose index alone
    repeats in every Job of the JobSet. A NonIndexed Job's pods are rankless."""
    labels = _mapping(meta.get("labels"))
    replicated = labels.get(JOBSET_REPLICATED_JOB)
    completion = _meta_value(meta, JOB_COMPLETION_INDEX)
    if replicated is None or completion is None:
        return None
    name = _named(replicated, JOBSET_REPLICATED_JOB)
    job = _part(labels.get(JOBSET_JOB_INDEX), JOBSET_JOB_INDEX, bound)
    index = _part(completion, JOB_COMPLETION_INDEX, bound)
    return Rank(key=f"{name}/{job}/{index}", index=index, source="jobset")


def _kubeflow(meta: dict[str, Any], owner_kind: str, bound: int) -> Rank | None:
    """`<replica type>/<index>`, as the Kubeflow training operator labels its pods. An
    MPIJob's launcher has a type and no index: one pod, rankless."""
    labels = _mapping(meta.get("labels"))
    kind, value = labels.get(KUBEFLOW_REPLICA_TYPE), labels.get(KUBEFLOW_REPLICA_INDEX)
    if value is None:
        return None
    name = _named(kind, KUBEFLOW_REPLICA_TYPE)
    index = _part(value, KUBEFLOW_REPLICA_INDEX, bound)
    return Rank(key=f"{name}/{index}", index=index, source="kubeflow")


# behaviour.md "Identity" order; a framework's source comes before the generic one its pods also match
# (JobSet before Indexed Job, LeaderWorkerSet before the StatefulSet ordinal). KubeRay has
# none: its workers are rankless.
RANK_SOURCES: tuple[Callable[[dict[str, Any], str, int], Rank | None], ...] = (
    _hccl,
    _volcano,
    _jobset,
    _indexed_job,
    _leaderworkerset,
    _statefulset,
    _kubeflow,
)


def _too_long(rank: Rank) -> str | None:
    """Every source's key obeys behaviour.md "Identity" 63 characters, also one added later."""
    if len(rank.key) <= MAX_KEY_LENGTH:
        return None
    return f"{rank.source} rank key {shown(rank.key)} is longer than {MAX_KEY_LENGTH} characters"


def resolve_rank(pod: dict[str, Any], owner_kind: str, bound: int) -> RankResult:
    """The pod's rank, or a rankless result (with a warning when a source was malformed)."""
    meta = _mapping(pod.get("metadata"))
    for source in RANK_SOURCES:
        try:
            rank = source(meta, owner_kind, bound)
        except _BadRank as bad:
            return RankResult(None, f"rank ignored, pod treated as rankless: {bad}")
        if rank is not None:
            problem = _too_long(rank)
            if problem:
                return RankResult(None, f"rank ignored, pod treated as rankless: {problem}")
            return RankResult(rank)
    return RankResult(None)


def rank_as_admitted(pod: dict[str, Any], owner_kind: str, bound: int, decided: str | None) -> RankResult:
    """The rank a pod homing admitted keeps for good: `decided`, the key its decision recorded
    (None: admitted rankless). A source written after admission must not move the pod to
    another key: MindCluster's Volcano plugin writes `hccl/rankIndex` through the binding, so
    a Volcano Job's `worker/7`, admitted and looked up under that key, was remembered at bind
    as `7` and never found again. The decided key comes from whichever source still gives it."""
    if decided is None:  # rankless as admitted; a malformed source still says so (an InvalidRank Event)
        return RankResult(None, resolve_rank(pod, owner_kind, bound).warning)
    meta = _mapping(pod.get("metadata"))
    for source in RANK_SOURCES:
        try:
            rank = source(meta, owner_kind, bound)
        except _BadRank:
            continue
        if rank is not None and rank.key == decided:
            return RankResult(rank)
    return resolve_rank(pod, owner_kind, bound)  # the record names no source's key: as if undecided
