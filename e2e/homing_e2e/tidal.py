"""The tidal harness: a local control plane with Volcano and kwok, fake NPU nodes that
report the images they hold, and a recorder that judges every re-placement against
the cluster as it was at that moment (independently of homing's own memory)."""
from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from homing.engine.cluster.health import UNHEALTHY_TAINTS
from homing.engine.replicas.deletion_cost import ANNOTATION as DELETION_COST, is_mark
from homing.kube.client import MERGE_PATCH, Kube, KubeError
from homing.kube.watch.reflector import Reflector
from homing_e2e import kube_gangs, objects as o
from homing_e2e.cluster import LocalControlPlane, free_port
from homing_e2e.imagecache import ImageCache
from homing_e2e.modules import pinned_dir
from homing_e2e.operator_process import OperatorProcess
from homing_e2e.tcpproxy import Backend, TcpProxy
from homing_e2e.tidal_schedulers import INFERENCE_PRIORITY, NPU, TRAINING_PRIORITY, every_rank, scheduling_for

NODE_NPUS = 8  # every fake node has 8; every pod of the days asks for a whole node
NS = "ai"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"  # merges conditions by type
KUBELET_STOPPED = "homing.test/kubelet-stopped"  # a faulted node: kwok's node stage skips it
KWOK_STAGES = (
    "pod/fast/pod-ready.yaml",
)  # not pod-complete: it would finish training pods (owned by a Job) as Succeeded; no status
# heartbeat stage: leases keep nodes alive, and a status heartbeat would end a fault early.
# kwok's node-initialize and pod-delete stages are used with one more condition each (see
# _node_stage, _pod_stages), and a pod held by a finalizer is stopped first.
POD_STOPPED_STAGE = {  # a deleted pod that a finalizer holds (a Job's pods) fails, as a kubelet stops it
    "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "homing-test-pod-stop"},
    "spec": {"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
             "selector": {"matchExpressions": [
                 {"key": ".metadata.deletionTimestamp", "operator": "Exists"},
                 {"key": ".metadata.finalizers", "operator": "Exists"},
                 {"key": ".status.phase", "operator": "In", "values": ["Pending", "Running"]}]},
             "next": {"statusTemplate": "phase: Failed\nreason: Terminated\n"}},
}
SUPERPOD, RACK = "homing.io/superpod-id", "homing.io/rack-id"
NODES_PER_SUPERPOD, NODES_PER_RACK = 8, 4


# -- what happened ---------------------------------------------------------------------------

def decision_reason(pod: dict) -> str:
    """The reason homing's decision annotation gives; "" without one, or where another webhook
    wrote something else there (the patching floor's "floor": bench/noop_webhook.py). Read as
    JSON unguarded it raised in the middle of a bind, and the rank's pull went uncounted."""
    try:
        record = json.loads((pod["metadata"].get("annotations") or {}).get("homing.io/decision") or "{}")
    except ValueError:
        return ""
    reason = record.get("reason", "") if isinstance(record, dict) else ""
    return reason if isinstance(reason, str) else ""


@dataclass
class Replacement:
    key: str
    home: str | None  # the rank's last node, or None for a pool (see `pool`)
    node: str
    outcome: str  # home, domain, elsewhere
    feasible: bool
    at: float
    phase: str = ""  # the day's step it happened in
    # why home was not feasible: held-by-ranked/-pool (a training rank or a replica is on it), not-ready, gone, just-freed, same-cycle
    blocked: str = ""
    reason: str = ""  # homing's decision reason for the pod, when it made one
    free_homes: set[str] = field(default_factory=set)  # a feasible miss: the homes that were free when it bound
    holders: set[str] = field(default_factory=set)  # held-by-*: the pods on the home then (uids)


def preferred_terms(pod: dict) -> list[tuple[int, set[str]]]:
    """The pod's preferred node affinity terms as (weight, the node names they match by name:
    homing's terms use the hostname label by default, a user's may use the name field)."""
    terms = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    out = []
    for t in terms:
        pref = t.get("preference") or {}
        names = {v for e in (pref.get("matchFields") or []) + (pref.get("matchExpressions") or [])
                 if e.get("key") in ("metadata.name", "kubernetes.io/hostname") and e.get("operator") == "In"
                 for v in e.get("values") or []}
        out.append((int(t.get("weight", 0)), names))
    return out


def job_of(key: str) -> str:
    """The training job a rank belongs to: its key's first part."""
    return key.split("/")[0]


@dataclass
class PodSeen:
    key: str
    image: str
    image_gb: float
    npus: int
    seen: float
    ranked: bool = False  # a training rank (Volcano Job, task index); else a replica of a pool
    bound: float | None = None
    node: str | None = None
    started: bool = False
    replacement: bool = False
    leaving: bool = False  # deletion under way: still holds its NPUs until it is gone
    warm_room: set[str] = field(default_factory=set)  # a re-placement: nodes holding its image it could have taken (see _warm_room)
    warm_at_bind: frozenset[str] = frozenset()  # those nodes as it bound, before the same cycle's binds were known
    claimed_at_bind: frozenset[str] = frozenset()  # of those, a waiting rank's home: homing never offers one as warm
    # of those, the ones other pods took in the same cycle -> what took them (TAKERS)
    taken_by: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # homing's decision reason, when it made one
    preferred: list[tuple[int, set[str]]] = field(default_factory=list)  # its preferred node terms: (weight, node names)
    cost: str | None = None  # its pod-deletion-cost annotation (homing's scale-in mark, or a user's cost), if any
    ready: bool = False  # Running and Ready: a ReplicaSet deletes not-ready replicas before it reads any cost

    @property
    def job(self) -> str:
        return job_of(self.key)


@dataclass
class PullRecord:
    """A re-placement that pulled its image. Cold when no node holding the image could have
    taken it instead: none as it bound (certain), or none left once the same cycle's binds
    are known (`warm_room` empty; a node taken one cycle later counts as taken too)."""

    phase: str
    seen: PodSeen
    minutes: float

    @property
    def unclaimed_after_the_cycle(self) -> set[str]:
        """Warm nodes still free once the cycle's binds are known that no waiting rank called home."""
        return self.seen.warm_room - self.seen.claimed_at_bind

    @property
    def over_the_floor(self) -> str | None:
        """Why a pull that was not cold as it bound still pulled, the reason that leaves the most
        to a placement first (OVER_THE_FLOOR); None when it was cold as it bound."""
        if not self.seen.warm_at_bind:
            return None
        if self.unclaimed_after_the_cycle:
            return "unclaimed-left-free"
        taken = set(self.seen.taken_by.values())
        return next((f"taken-by-{t}" for t in TAKERS if t in taken), "claimed-only")

    def details(self) -> dict:
        node, warm, claimed = self.seen.node, self.seen.warm_at_bind, self.seen.claimed_at_bind
        return {"phase": self.phase, "key": self.seen.key, "node": node, "reason": self.seen.reason,
                "warm_at_bind": sorted(warm)[:8], "warm_after_the_cycle": sorted(self.seen.warm_room)[:8],
                "claimed_at_bind": sorted(claimed)[:8],
                # from the whole sets: the lists above stop at eight, so they cannot be subtracted
                "unclaimed_at_bind": sorted(warm - claimed)[:8],
                "unclaimed_after_the_cycle": sorted(self.unclaimed_after_the_cycle)[:8],
                "taken_in_the_cycle_by": dict(sorted(Counter(self.seen.taken_by.values()).items())),
                "over_the_floor": self.over_the_floor,
                # what the pod asked for: each preferred term's weight, and whether it named the node / a node warm as it bound
                "terms": [[w, node in names, bool(names & warm)] for w, names in self.seen.preferred]}


# What took a warm node a pull could have had, in the same cycle, most avoidable first: a pod of another
# image going elsewhere (a placement could have spared it), one of the pulling pod's image going elsewhere
# (one of the two pulls either way), a pod going to its own home (a rank to its last node, a replica to a
# node its pool ran on).
TAKERS = ("other-image", "same-image", "home")
OVER_THE_FLOOR = ("unclaimed-left-free", *(f"taken-by-{t}" for t in TAKERS), "claimed-only")

BOUND_TOGETHER_S = 0.3  # first binds of two gangs this close: one scheduling session's (Volcano's period is 0.5 s)


@dataclass
class ScaleIn:
    """A scale-in as the ReplicaSet carried it out: the replicas standing on waiting gangs'
    homes as it began (the ones homing's marks ask it to delete first, gang by gang), and
    whether its deletions came in that order. A gang is placed as soon as enough nodes are
    idle, so the order within the scale-in decides which nodes those are."""

    waiting_homes: dict[str, str]  # node -> the job whose rank waits for it
    replicas: int
    held: dict[str, int]  # job -> replicas standing on its homes as the scale-in began
    marked_on_waiting_homes: int
    marked_elsewhere: int
    not_ready: int = 0  # replicas not Running and Ready as it began: the ReplicaSet deletes those first, whatever their cost
    not_ready_unmarked: int = 0  # of those, the ones with no mark (each one deleted before the marked ones)
    order: list[str | None] = field(default_factory=list)  # each deletion in turn: the job whose home it freed, if any
    costs: list[int] = field(default_factory=list)  # homing's marks on the deleted replicas that had one, in turn
    job_marks: dict[str, int] = field(default_factory=dict)  # job -> the lowest mark on its homes' replicas: the order homing asked for
    bound_jobs: list[tuple[str, float]] = field(default_factory=list)  # waiting jobs as their first rank bound in the step, and when

    def bound(self, job: str, when: float) -> None:
        if job in self.held and job not in (j for j, _ in self.bound_jobs):
            self.bound_jobs.append((job, when))

    def bind_groups(self) -> list[list[str]]:
        """The gangs in the order they bound, those bound together in one group: a scheduler
        binds one session's gangs from parallel calls, so their order within it says nothing."""
        groups: list[list[str]] = []
        last = None
        for job, when in self.bound_jobs:
            if last is None or when - last > BOUND_TOGETHER_S:
                groups.append([])
            groups[-1].append(job)
            last = when
        return groups

    def deleted(self, replica: PodSeen) -> None:
        self.order.append(self.waiting_homes.get(replica.node or ""))
        if is_mark(replica.cost):
            self.costs.append(int(replica.cost))  # type: ignore[arg-type]

    def summary(self) -> dict:
        """Counts as the scale-in began; of its first `on_waiting_homes` deletions how many were
        on waiting homes (all of them when the ReplicaSet deleted those first); and after how
        many deletions the first gang had every held home back, against how many it had held
        (equal when the deletions came gang by gang)."""
        on_waiting = sum(self.held.values())
        first = self.order[:on_waiting]
        whole = []
        for job, n in self.held.items():
            at = [i for i, j in enumerate(self.order) if j == job]
            if n and len(at) == n:
                whole.append((at[-1] + 1, n))
        return {"waiting_homes": len(self.waiting_homes), "replicas": self.replicas, "on_waiting_homes": on_waiting,
                "marked_on_waiting_homes": self.marked_on_waiting_homes, "marked_elsewhere": self.marked_elsewhere,
                "not_ready": self.not_ready, "not_ready_unmarked": self.not_ready_unmarked,
                "deleted": len(self.order), "deleted_on_waiting_homes": sum(1 for j in self.order if j),
                "first_deletions_on_waiting_homes": [sum(1 for j in first if j), len(first)],
                "first_gang_whole_after": list(min(whole)) if whole else None,
                "cost_order_inversions": inversions(self.costs),
                # the gangs as homing's marks free their homes, and as the scheduler placed them
                "jobs_by_mark": sorted(self.job_marks, key=lambda j: (self.job_marks[j], j)),
                "jobs_by_bind": self.bind_groups()}


def ready(obj: dict) -> bool:
    """A pod's or a node's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or ())


def running_and_ready(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and ready(pod)


def inversions(values: list[int]) -> float | None:
    """Of the pairs of values whose order matters (unequal), the share that came higher first:
    0 when the deletions followed the costs, about 0.5 when their order was random."""
    pairs = inverted = 0
    for i, a in enumerate(values):
        for b in values[i + 1:]:
            if a != b:
                pairs += 1
                inverted += a > b
    return round(inverted / pairs, 3) if pairs else None


@dataclass
class Recorder:
    """Fed by a pod watch and a node watch; keeps its own view of where every rank and
    every replica pool was, and judges each new binding against it."""

    cache: ImageCache
    images: dict[str, float]  # image -> GB
    pods: dict[str, PodSeen] = field(default_factory=dict)  # uid -> pod
    last_node: dict[str, str] = field(default_factory=dict)  # rank key -> node
    pool_nodes: dict[str, set[str]] = field(default_factory=dict)  # pool key -> nodes it ran on
    nodes: dict[str, dict] = field(default_factory=dict)  # name -> {"ready": bool, "superpod": str}
    replacements: list[Replacement] = field(default_factory=list)
    waits: list[tuple[str, str, float]] = field(default_factory=list)  # (step of the day, "rank" or "replica", create -> bound s)
    ranks_seen: dict[str, list[float]] = field(default_factory=dict)  # job -> when each of its pods was first seen
    replicas_seen: dict[str, list[float]] = field(default_factory=dict)  # phase -> when each new replica was first seen
    started: list[tuple[str, str]] = field(default_factory=list)  # (node, image) to report
    last_bind: float = 0.0
    last_change: float = 0.0  # a pod created, bound, leaving or deleted (not status chatter)
    pull_records: list[PullRecord] = field(default_factory=list)  # every re-placement pull, told cold or not at the end
    pulls_by_phase: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> {"first": n, "replacement": n}
    restarts_by_phase: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> {job: gang restarts in it}
    # phase -> {job: ranks with no bound pod as the step ended}: a gang the scheduler's side had not
    # brought back by then (its re-placements, not made, count in no home rate)
    unbound_by_phase: dict[str, dict[str, int]] = field(default_factory=dict)
    resumed_by_phase: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> {job: stuck restarts the harness resumed}
    scheduler_restarts_by_phase: dict[str, int] = field(default_factory=dict)  # phase -> times the scheduler exited and was started again
    released: dict[str, float] = field(default_factory=dict)  # node -> when a pod last left it
    settle_time: float = 1.0  # two of Volcano's 0.5 s cycles: the scheduler has seen the room
    phase: str = "dawn"  # set by the day's script as it moves on
    transitions: list[tuple[float, str, str, bool]] = field(default_factory=list)  # (when, phase, node, ready): faults, or flaps
    left_in: dict[str, str] = field(default_factory=dict)  # uid -> the step in which the pod was deleted
    recent_binds: deque[PodSeen] = field(default_factory=deque)  # re-placements bound within settle_time, oldest first
    rank_losses: dict[str, list[float]] = field(default_factory=dict)  # job -> when a bound rank of it was deleted or failed
    finished: set[str] = field(default_factory=set)  # failed or succeeded pods not deleted yet
    scale_ins: dict[str, ScaleIn] = field(default_factory=dict)  # phase -> the scale-in that began it (scale_in_begins)

    @property
    def replacement_pulls(self) -> int:
        return len(self.pull_records)

    @property
    def replacement_pull_minutes(self) -> float:
        return sum(p.minutes for p in self.pull_records)

    @staticmethod
    def key_of(pod: dict) -> tuple[str, bool]:
        """(key, ranked). Volcano Job pods are ranked by task index, Indexed Job pods by
        completion index; Deployment replicas are a pool."""
        meta = pod["metadata"]
        ann = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        job = ann.get("volcano.sh/job-name") or labels.get("volcano.sh/job-name")
        index = ann.get("volcano.sh/task-index") or labels.get("volcano.sh/task-index")
        if job and index is not None:
            return f"{job}/{ann.get('volcano.sh/task-spec', '')}/{index}", True
        if indexed := kube_gangs.rank_of(meta):
            return "/".join(indexed), True
        return (labels.get("app") or meta.get("generateName") or meta["name"]), False

    def node_event(self, kind: str | None, node: dict) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            self.nodes.pop(name, None)
            return
        taints = {t.get("key") for t in node.get("spec", {}).get("taints") or []}
        now_ready = ready(node) and not taints & UNHEALTHY_TAINTS
        if name in self.nodes and self.nodes[name]["ready"] != now_ready:
            self.transitions.append((round(time.monotonic(), 1), self.phase, name, now_ready))
        self.nodes[name] = {"ready": now_ready, "superpod": (node["metadata"].get("labels") or {}).get(SUPERPOD)}

    def _free(self, node: str, exclude: str) -> int:
        """NPUs free on the node now; a pod being deleted still holds its NPUs, as it
        does for the scheduler until the kubelet (kwok) has removed it."""
        used = sum(p.npus for uid, p in self.pods.items() if uid != exclude and p.node == node)
        return NODE_NPUS - used

    def _holders(self, node: str | None, uid: str) -> set[str]:
        """The pods (uids) on the node besides `uid`, leaving ones included."""
        return {u for u, p in self.pods.items() if u != uid and p.node == node}

    def _blocked(self, node: str | None, uid: str, npus: int) -> str:
        """Why the home could not be taken now ("" when it could): it must exist, be Ready
        and have the NPUs free, for long enough that the scheduler's own snapshot (taken
        each cycle) could have seen it free."""
        state = self.nodes.get(node or "")
        if not state:
            return "gone"
        if not state["ready"]:
            return "not-ready"
        if self._free(node, uid) < npus:
            ranked = any("/" in self.pods[u].key for u in self._holders(node, uid))
            return "held-by-ranked" if ranked else "held-by-pool"
        if time.monotonic() - self.released.get(node or "", float("-inf")) < self.settle_time:
            return "just-freed"
        return ""

    def _warm_room(self, image: str, uid: str, npus: int) -> set[str]:
        """The nodes holding `image` that the scheduler could have given `uid` when it
        bound, by `_blocked`'s rule: Ready, `npus` free, not just freed. Nodes other pods
        take in the same cycle are removed later (`_taken_in_same_cycle`)."""
        used: dict[str, int] = {}
        for u, p in self.pods.items():  # one pass: this runs while a gang's binds stream in
            if u != uid and p.node:
                used[p.node] = used.get(p.node, 0) + p.npus
        settled = time.monotonic() - self.settle_time
        return {n for n, state in self.nodes.items()
                if state["ready"] and NODE_NPUS - used.get(n, 0) >= npus and self.cache.disk(n).has(image)
                and self.released.get(n, float("-inf")) <= settled}

    def _gone(self, uid: str, now: float) -> None:
        self.last_change = now
        self.left_in.setdefault(uid, self.phase)
        gone = self.pods.pop(uid, None)
        if gone is not None and gone.node:
            self.released[gone.node] = now
            if gone.ranked:
                self.rank_losses.setdefault(gone.job, []).append(now)

    def pod_event(self, kind: str | None, pod: dict) -> None:
        now = time.monotonic()
        uid = pod["metadata"]["uid"]
        if kind == "DELETED":
            if uid in self.finished:
                self.finished.discard(uid)
            else:
                self._gone(uid, now)
            return
        if uid in self.finished:
            return
        if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):  # holds nothing for the scheduler any more
            self.finished.add(uid)  # a Job's finalizer keeps it a while yet
            if uid in self.pods:
                self._gone(uid, now)
            return
        seen = self.pods.get(uid)
        if seen is not None:
            seen.cost = (pod["metadata"].get("annotations") or {}).get(DELETION_COST)
            seen.ready = running_and_ready(pod)
        if pod["metadata"].get("deletionTimestamp"):
            if seen is not None and not seen.leaving:
                seen.leaving = True  # a leaving pod keeps its node busy until it is deleted
                self.last_change = now
                if not seen.ranked and self.phase in self.scale_ins:
                    self.scale_ins[self.phase].deleted(seen)
            return
        if seen is None:
            container = pod["spec"]["containers"][0]
            image = container["image"]
            npus = int((container.get("resources", {}).get("limits") or {}).get(NPU, 0))
            key, ranked = self.key_of(pod)
            seen = self.pods[uid] = PodSeen(key, image, self.images.get(image, 0.0), npus, now, ranked,
                                            cost=(pod["metadata"].get("annotations") or {}).get(DELETION_COST),
                                            ready=running_and_ready(pod))
            if ranked:
                self.ranks_seen.setdefault(seen.job, []).append(now)
            else:
                self.replicas_seen.setdefault(self.phase, []).append(now)
            self.last_change = now
        node = pod["spec"].get("nodeName")
        if node and seen.node is None:
            seen.node, seen.bound = node, now
            self.last_bind = self.last_change = now
            if kind is not None:  # not from the initial listing
                self.waits.append((self.phase, "rank" if seen.ranked else "replica", now - seen.seen))
            self._judge(pod, seen, uid)
        if node and not seen.started and pod.get("status", {}).get("phase") == "Running":
            seen.started = True
            pulled = self.cache.start(node, seen.image, seen.image_gb)
            if pulled:
                row = self.pulls_by_phase.setdefault(self.phase, {})
                kind = "replacement" if seen.replacement else "first"
                row[kind] = row.get(kind, 0) + 1
            if pulled and seen.replacement:
                self.pull_records.append(PullRecord(self.phase, seen, self.cache.pull_minutes_for(seen.image_gb)))
            self.started.append((node, seen.image))

    def _judge(self, pod: dict, seen: PodSeen, uid: str) -> None:
        key, ranked = self.key_of(pod)
        node, when = seen.node, seen.bound
        assert node is not None and when is not None  # judged as it binds
        before = len(self.replacements)
        self._classify(key, ranked, node, seen, uid)
        if ranked and self.phase in self.scale_ins:
            self.scale_ins[self.phase].bound(seen.job, when)
        if len(self.replacements) > before:
            seen.replacement = True
            seen.warm_room = self._warm_room(seen.image, uid, seen.npus)
            seen.warm_at_bind = frozenset(seen.warm_room)
            seen.claimed_at_bind = seen.warm_at_bind & self.waiting_homes()[0].keys() if seen.warm_room else frozenset()
            seen.preferred = preferred_terms(pod)
            self.recent_binds.append(seen)
            self.replacements[-1].reason = seen.reason = decision_reason(pod)

    def _taken_in_same_cycle(self, node: str, now: float, taker: PodSeen, went_home: bool) -> None:
        """A home another pod bound to within settle_time (two cycles) of a miss was given
        away in the same scheduling session: a session's bind events arrive in no useful
        order, so the miss's home only looked free. Such a miss was not feasible. The same
        holds for the warm nodes a re-placement could have taken instead of pulling."""
        for r in reversed(self.replacements):
            if now - r.at > self.settle_time:
                break
            if r.feasible and r.outcome != "home" and node in r.free_homes:
                r.free_homes.discard(node)
                if not r.free_homes:
                    r.feasible, r.blocked = False, "same-cycle"
        while self.recent_binds and now - (self.recent_binds[0].bound or now) > self.settle_time:
            self.recent_binds.popleft()
        for seen in self.recent_binds:
            if node in seen.warm_room:
                seen.warm_room.discard(node)
                seen.taken_by[node] = "home" if went_home else "same-image" if taker.image == seen.image else "other-image"

    def _classify(self, key: str, ranked: bool, node: str, seen: PodSeen, uid: str) -> None:
        went_home = self.last_node.get(key) == node if ranked else node in self.pool_nodes.get(key, ())
        self._taken_in_same_cycle(node, time.monotonic(), seen, went_home)
        if ranked:
            home = self.last_node.get(key)
            self.last_node[key] = node
            if home is None:
                return
            outcome = "home" if node == home else self._domain(home, node)
            blocked = "" if outcome == "home" else self._blocked(home, uid, seen.npus)  # the scheduler saw it free
            free = {home} if outcome != "home" and not blocked else set()
            holders = self._holders(home, uid) if blocked.startswith("held-by") else set()  # ranks only: a pool has many homes
            self.replacements.append(Replacement(key, home, node, outcome, not blocked, time.monotonic(), self.phase, blocked,
                                                 free_homes=free, holders=holders))
            return
        # A replica re-places when its pool has a home no live replica holds: a node an
        # earlier replica ran on. Home if it took one of those; feasible if one had room.
        pool = self.pool_nodes.setdefault(key, set())
        held = {p.node for u, p in self.pods.items() if u != uid and p.key == key and p.node and not p.leaving}
        homes = pool - held
        if homes:
            outcome = "home" if node in homes else "elsewhere"
            why = {} if outcome == "home" else {n: self._blocked(n, uid, seen.npus) for n in sorted(homes)}
            free = {n for n, b in why.items() if not b}
            blocked = "" if outcome == "home" or free else min(why.values())
            self.replacements.append(Replacement(key, None, node, outcome, not blocked, time.monotonic(), self.phase, blocked,
                                                 free_homes=free))
        pool.add(node)

    def _domain(self, home: str, node: str) -> str:
        a, b = self.nodes.get(home, {}).get("superpod"), self.nodes.get(node, {}).get("superpod")
        return "domain" if a and a == b else "elsewhere"

    def miss_details(self) -> list[dict]:
        """Each feasible miss, for the record: where the pod went and which homes were free."""
        return [{"phase": r.phase, "key": r.key, "home": r.home, "node": r.node, "reason": r.reason, "free_homes": sorted(r.free_homes)}
                for r in self.replacements if r.feasible and r.outcome != "home"]

    def misses(self) -> dict[str, int]:
        """Feasible re-placements that did not go home, by homing's reason (evidence for why)."""
        out: dict[str, int] = {}
        for r in self.replacements:
            if r.feasible and r.outcome != "home":
                label = f"{'pool' if r.home is None else 'rank'}:{r.reason or 'no-decision'}"
                out[label] = out.get(label, 0) + 1
        return out

    def by_phase(self) -> dict[str, dict[str, int]]:
        """Re-placements of each step of the day: how many, how many went home, how many
        could have, and why the others could not (the evidence behind the home rate)."""
        out: dict[str, dict[str, int]] = {}
        for r in self.replacements:
            row = out.setdefault(r.phase, {"replacements": 0, "home": 0, "feasible": 0})
            row["replacements"] += 1
            row["home"] += r.outcome == "home"
            row["feasible"] += r.feasible
            if r.blocked:
                row[f"blocked:{r.blocked}"] = row.get(f"blocked:{r.blocked}", 0) + 1
            if r.holders and all(self.left_in.get(u) == r.phase for u in r.holders):
                # held only for a while: every pod on the home was deleted later in the same step
                row["held-then-freed"] = row.get("held-then-freed", 0) + 1
        return out

    def waiting_homes(self) -> tuple[dict[str, str], list[PodSeen]]:
        """The homes of ranks with no bound pod (node -> a waiting gang's job), and the bound replicas."""
        bound = {p.key for p in self.pods.values() if p.ranked and p.node and not p.leaving}
        waiting = {node: job_of(key) for key, node in self.last_node.items() if key not in bound}
        return waiting, [p for p in self.pods.values() if not p.ranked and p.node and not p.leaving]

    def unmarked_on_waiting_homes(self) -> int:
        """Replicas on a waiting gang's home that carry no mark of homing's (yet)."""
        waiting, replicas = self.waiting_homes()
        return sum(1 for p in replicas if p.node in waiting and not is_mark(p.cost))

    def scale_in_begins(self) -> None:
        """Called just before the step's scale-in: which replicas stand on homes of ranks
        with no bound pod (a waiting gang's), how many of those carry a deletion cost, and
        from here on the order the ReplicaSet deletes in (its deletions are what free them)."""
        waiting, replicas = self.waiting_homes()
        held: dict[str, int] = {}
        job_marks: dict[str, int] = {}
        for p in replicas:
            if p.node in waiting:
                job = waiting[p.node]
                held[job] = held.get(job, 0) + 1
                if is_mark(p.cost):
                    job_marks[job] = min(job_marks.get(job, int(p.cost)), int(p.cost))  # type: ignore[arg-type]
        self.scale_ins[self.phase] = ScaleIn(
            waiting_homes=waiting, replicas=len(replicas), held=held, job_marks=job_marks,
            marked_on_waiting_homes=sum(1 for p in replicas if p.node in waiting and is_mark(p.cost)),
            marked_elsewhere=sum(1 for p in replicas if p.node not in waiting and is_mark(p.cost)),
            not_ready=sum(1 for p in replicas if not p.ready),
            not_ready_unmarked=sum(1 for p in replicas if not p.ready and not is_mark(p.cost)))

    def summary(self) -> dict:
        r = self.replacements
        home = sum(1 for x in r if x.outcome == "home")
        feasible = [x for x in r if x.feasible]
        home_of_feasible = sum(1 for x in feasible if x.outcome == "home")
        lat = sorted(wait for _, _, wait in self.waits)
        cold = [p for p in self.pull_records if not p.seen.warm_room]
        cold_at_bind = [p for p in self.pull_records if not p.seen.warm_at_bind]
        over = Counter(p.over_the_floor for p in self.pull_records)
        pulls_by_phase = {phase: dict(row) for phase, row in self.pulls_by_phase.items()}
        for label, pulls in (("cold", cold), ("cold-at-bind", cold_at_bind)):
            for p in pulls:
                pulls_by_phase[p.phase][label] = pulls_by_phase[p.phase].get(label, 0) + 1
        return {
            "replacements": len(r),
            "home": home,
            "domain": sum(1 for x in r if x.outcome == "domain"),
            "elsewhere": sum(1 for x in r if x.outcome == "elsewhere"),
            "feasible": len(feasible),
            "home_of_feasible": home_of_feasible,
            "home_rate": round(home / len(r), 4) if r else None,
            "feasible_home_rate": round(home_of_feasible / len(feasible), 4) if feasible else None,
            "pulls": self.cache.pulls,
            "pull_minutes": round(self.cache.pull_minutes, 1),
            "replacement_pulls": self.replacement_pulls,
            "replacement_pull_minutes": round(self.replacement_pull_minutes, 1),
            "cold_replacement_pulls": len(cold),
            "cold_replacement_pull_minutes": round(sum(p.minutes for p in cold), 1),
            "cold_at_bind_replacement_pulls": len(cold_at_bind),
            "cold_at_bind_replacement_pull_minutes": round(sum(p.minutes for p in cold_at_bind), 1),
            # each pull not cold as it bound, by why it still pulled (PullRecord.over_the_floor); "unclaimed-left-free":
            # a warm node no waiting rank called home stayed free, one homing's warm terms could have named
            "replacement_pulls_over_the_floor": {why: over[why] for why in OVER_THE_FLOOR if over[why]},
            "warm_pull_details": [p.details() for p in self.pull_records if p.seen.warm_at_bind],
            # every re-placement pull in one line each: step, rank or pool, node, image, homing's reason, warm as it bound
            "pull_lines": [[p.phase, p.seen.key, p.seen.node, p.seen.image, p.seen.reason, bool(p.seen.warm_at_bind)]
                           for p in self.pull_records],
            "misses": self.misses(),
            "miss_details": self.miss_details(),
            "by_phase": self.by_phase(),
            "pulls_by_phase": pulls_by_phase,  # with the step's cold re-placement pulls ("cold-at-bind", "cold")
            "restarts_by_phase": self.restarts_by_phase,
            "unbound_by_phase": self.unbound_by_phase,
            "resumed_by_phase": self.resumed_by_phase,
            "scheduler_restarts_by_phase": self.scheduler_restarts_by_phase,
            "scale_in_by_phase": {phase: x.summary() for phase, x in self.scale_ins.items()},
            "nodes_dropped": sum(1 for t in self.transitions if not t[3]),  # 2 in the scripted day (its faults); more is flapping
            "create_to_scheduled_p50_s": round(statistics.median(lat), 3) if lat else None,
            "create_to_scheduled_p99_s": round(lat[min(len(lat) - 1, int(0.99 * (len(lat) - 1) + 0.5))], 3) if lat else None,
            "create_to_scheduled_p50_by_phase": medians((phase, wait) for phase, _, wait in self.waits),
            "create_to_scheduled_p50_by_kind": medians((kind, wait) for _, kind, wait in self.waits),
            "gang_creation_spread_s": gang_creation_spread(self.ranks_seen),
            # phase -> [replicas created, s from the first to the last]: a ReplicaSet creates in batches, each
            # after the last one's admissions answered
            "replica_creation_span_by_phase": {k: [len(v), round(max(v) - min(v), 3)] for k, v in self.replicas_seen.items()},
        }


# -- the cluster -------------------------------------------------------------------------------

def medians(pairs: Iterable[tuple[str, float]]) -> dict[str, list]:
    """{group: [how many, their median rounded to ms]} of (group, value) pairs, groups in first-seen order."""
    groups: dict[str, list[float]] = {}
    for group, value in pairs:
        groups.setdefault(group, []).append(value)
    return {group: [len(values), round(statistics.median(values), 3)] for group, values in groups.items()}


def gang_creation_spread(seen_by_job: dict[str, list[float]], apart: float = 5.0) -> dict[str, float | int]:
    """How long a gang's pods took to appear, first to last, over every (re)creation of every
    job: a gang cannot be placed before its last pod exists, so admission time shows here.
    Pods of one job seen more than `apart` s after the one before start a new creation."""
    spreads: list[float] = []
    for times in seen_by_job.values():
        times = sorted(times)
        start = prev = times[0]
        for t in times[1:] + [float("inf")]:
            if t - prev > apart:
                spreads.append(prev - start)
                start = t
            prev = t
    if not spreads:
        return {}
    spreads.sort()
    return {"creations": len(spreads), "p50": round(statistics.median(spreads), 3), "max": round(spreads[-1], 3)}


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (Linux /proc; 0 where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


class TidalCluster:
    """One run: its own control plane, Volcano (or, for a `kube-scheduler…` variant,
    kube-scheduler 1.37 with its own gangs), kwok, nodes, and homing when asked."""

    def __init__(self, variant: str, superpods: int, images: dict[str, float], bandwidth_gbps: float, disk_gb: float = 120,
                 volcano_args: tuple[str, ...] = (), tide: str = "preempt", controller_manager_args: tuple[str, ...] = (),
                 operator_env: dict[str, str] | None = None, operator_lag_s: float = 0.0) -> None:
        self.variant = variant
        self.operator_lag_s = operator_lag_s  # homing's view of the cluster runs this far behind (tcpproxy.py's lag)
        self.lag_proxy: TcpProxy | None = None
        self.scheduling = scheduling_for(variant, tide, volcano_args)  # Volcano, or kube-scheduler's gangs
        self.superpods = superpods
        self.workdir = Path(tempfile.mkdtemp(prefix=f"homing-tidal-{variant.replace('+', '-')}-"))
        self.cp = LocalControlPlane(
            self.workdir / "cp",
            controllers="*,-nodeipam",
            apiserver_args=("--default-not-ready-toleration-seconds=5", "--default-unreachable-toleration-seconds=5",
                            *self.scheduling.apiserver_args),
            # faults are explicit: grace only has to outlast a late lease renewal
            controller_manager_args=("--node-monitor-grace-period=40s", "--node-monitor-period=2s", *controller_manager_args,
                                     *self.scheduling.controller_manager_args),
            release=self.scheduling.release,
        )
        self.recorder = Recorder(ImageCache(disk_gb, bandwidth_gbps), images)
        self.operator_env = operator_env or {}
        self.operator: OperatorProcess | None = None
        self.kube: Kube | None = None
        self.tasks: list[asyncio.Task] = []
        self.gang_sizes: dict[str, int] = {}  # training job -> ranks

    @property
    def node_names(self) -> list[str]:
        return [f"npu-{i:03d}" for i in range(self.superpods * NODES_PER_SUPERPOD)]

    async def start(self) -> TidalCluster:
        (self.workdir / "cp").mkdir(parents=True, exist_ok=True)
        self.cp.start()
        kube = self.kube = await Kube.connect(str(self.cp.kubeconfig))
        await o.install_crd(kube)
        await self.scheduling.start(self.cp, kube, self.workdir)
        k = f"--kubeconfig={self.cp.kubeconfig}"
        stages = pinned_dir("kwok", "sigs.k8s.io/kwok") / "kustomize" / "stage"
        node_stage = self._node_stage(stages / "node" / "fast" / "node-initialize.yaml")
        self.cp.run("kwok", [k, "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                             "--node-lease-duration-seconds=40",  # the nodes' heartbeat: a lease renewed every 10 s
                             f"--server-address=127.0.0.1:{free_port()}", f"--config={node_stage}",
                             *[f"--config={stages / s}" for s in KWOK_STAGES],
                             *[f"--config={path}" for path in self._pod_stages(stages / "pod" / "fast" / "pod-delete.yaml")]])
        if "homing" in self.variant:
            env = {"HOMING_LOG_LEVEL": os.environ.get("HOMING_E2E_OPERATOR_LOG_LEVEL", "warning"), **self.scheduling.operator_env,
                   **self.operator_env}
            self.operator = OperatorProcess(self._operator_kubeconfig(), self.workdir, env=env)
            self.operator.start()
        await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NS, "labels": {"homing.io/enabled": "true"}}})
        for name, value, never in ((INFERENCE_PRIORITY, 1000, False), (TRAINING_PRIORITY, 100, True)):
            body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
            if never:
                body["preemptionPolicy"] = "Never"
            await kube.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=body)
        for i, name in enumerate(self.node_names):
            await self._node(name, i)
        self.tasks = [
            asyncio.create_task(Reflector(kube, "pods", f"/api/v1/namespaces/{NS}/pods", self.recorder.pod_event, retry=0.5).run()),
            asyncio.create_task(Reflector(kube, "nodes", "/api/v1/nodes", self.recorder.node_event, retry=0.5).run()),
            asyncio.create_task(self._report_images()),
            asyncio.create_task(self._resume_stuck()),
            asyncio.create_task(self._revive_scheduler()),
        ]
        await o.eventually(self._all_ready, timeout=60, what="all nodes Ready")
        await self.scheduling.nodes_ready(kube, self.node_names)  # e.g. MindCluster's per-node ConfigMaps
        await o.eventually(lambda: kube.request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default"), what="default SA")
        return self

    def _operator_kubeconfig(self) -> Path:
        """The admin's kubeconfig, or with `operator_lag_s` one through a proxy that holds the
        API server's answers back (the admissions it serves come in directly)."""
        if not self.operator_lag_s:
            return self.cp.kubeconfig
        port = int(self.cp.server.rsplit(":", 1)[1])
        self.lag_proxy = TcpProxy(lag_s=self.operator_lag_s).start()
        self.lag_proxy.set_backends([Backend(port)])
        path = self.workdir / "operator-lagged.kubeconfig"
        path.write_text(self.cp.kubeconfig.read_text().replace(self.cp.server, f"https://127.0.0.1:{self.lag_proxy.port}"))
        return path

    def _node_stage(self, upstream: Path) -> Path:
        """kwok's own node-initialize stage (read from the module cache), made to skip a
        node whose kubelet the harness stopped: otherwise it turns it Ready at once."""
        stage = yaml.safe_load(upstream.read_text())
        stage["spec"]["selector"]["matchExpressions"].append(
            {"key": f'.metadata.annotations.["{KUBELET_STOPPED}"]', "operator": "DoesNotExist"})
        path = self.workdir / "kwok-node-initialize.yaml"
        path.write_text(yaml.safe_dump(stage, sort_keys=False))
        return path

    def _pod_stages(self, upstream_delete: Path) -> list[Path]:
        """kwok's pod-delete stage made to wait until no finalizer holds the pod (a Job's
        controller removes its own once the pod has failed), and the stage that fails it."""
        stage = yaml.safe_load(upstream_delete.read_text())
        stage["spec"]["selector"]["matchExpressions"].append({"key": ".metadata.finalizers", "operator": "DoesNotExist"})
        delete, stop = self.workdir / "kwok-pod-delete.yaml", self.workdir / "kwok-pod-stop.yaml"
        delete.write_text(yaml.safe_dump(stage, sort_keys=False))
        stop.write_text(yaml.safe_dump(POD_STOPPED_STAGE, sort_keys=False))
        return [delete, stop]

    async def _node(self, name: str, i: int) -> None:
        sp, rack = i // NODES_PER_SUPERPOD, i // NODES_PER_RACK
        labels = {"kubernetes.io/hostname": name, "type": "kwok", SUPERPOD: f"sp{sp}", RACK: f"r{rack}"}
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
                "status": {"capacity": {NPU: str(NODE_NPUS), "cpu": "192", "memory": "2Ti", "pods": "110"},
                           "allocatable": {NPU: str(NODE_NPUS), "cpu": "192", "memory": "2Ti", "pods": "110"}}}
        self.scheduling.decorate_node(body, i, sp, rack)  # what the scheduler reads from a node besides
        await self.kube.request("POST", "/api/v1/nodes", body=body)

    async def _all_ready(self) -> bool:
        nodes = self.recorder.nodes
        return len(nodes) == len(self.node_names) and all(n["ready"] for n in nodes.values())

    async def _report_images(self) -> None:
        """The kubelet's part: each node reports the images it holds in status.images."""
        while True:
            await asyncio.sleep(0.3)
            touched = {node for node, _ in self.recorder.started}
            self.recorder.started.clear()
            for node in sorted(touched):
                try:
                    await self.kube.request("PATCH", f"/api/v1/nodes/{node}/status",
                                            body={"status": {"images": self.recorder.cache.status_images(node)}}, content_type=MERGE_PATCH)
                except KubeError:
                    pass

    async def _resume_stuck(self) -> None:
        """The scheduler's side left a gang's restart stuck (tidal_schedulers.Volcano.resume_stuck):
        resumed as an operator would, and counted by step, so the day goes on and says so."""
        while True:
            await asyncio.sleep(2.0)
            try:
                resumed = await self.scheduling.resume_stuck(self.kube, NS, time.monotonic())
            except Exception as err:  # the API server busy or going away: the next round looks again
                print(f"[harness] looking for stuck restarts failed: {err!r}"[:300], flush=True)
                continue
            for job in resumed:
                counts = self.recorder.resumed_by_phase.setdefault(self.recorder.phase, {})
                counts[job] = counts.get(job, 0) + 1
                print(f"[harness] {job}: a restart stuck in Volcano's job controller resumed (RestartJob command)", flush=True)

    async def _revive_scheduler(self) -> None:
        """A scheduler that exits is started again, as its Deployment would, and counted by step.
        MindCluster's plugin can end vc-scheduler with a panic in preemption (docs/dev/mindcluster.md);
        left down, the day binds nothing more and its figures say nothing."""
        name = self.scheduling.process
        while True:
            await asyncio.sleep(1.0)
            code = self.cp.revive(name)
            if code is not None:
                phase = self.recorder.phase
                self.recorder.scheduler_restarts_by_phase[phase] = self.recorder.scheduler_restarts_by_phase.get(phase, 0) + 1
                print(f"[harness] {name} exited (code {code}): started again, as its Deployment would", flush=True)

    # -- the day's moves ---------------------------------------------------------------------
    async def training_job(self, name: str, replicas: int, image: str, sp_block: int | None = None,
                           annotations: dict[str, str] | None = None) -> None:
        """`annotations`: more of them on the pods (a scheduler's policy, tidal_schedulers.py)."""
        self.gang_sizes[name] = replicas
        ann = {**({"sp-block": str(sp_block)} if sp_block else {}), **(annotations or {})}
        for path, body in self.scheduling.training(name, NS, replicas, image, ann):
            await self.kube.request("POST", path, body=body)

    async def inference(self, name: str, replicas: int, image: str) -> None:
        template = self.scheduling.replica_template(image)
        template["metadata"]["labels"] = {"app": name}
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}}
        await self.kube.request("POST", f"/apis/apps/v1/namespaces/{NS}/deployments", body=body)

    async def scale(self, name: str, replicas: int) -> None:
        await self.kube.request("PATCH", f"/apis/apps/v1/namespaces/{NS}/deployments/{name}",
                                body={"spec": {"replicas": replicas}}, content_type=MERGE_PATCH)

    async def fault(self, node: str, down: bool) -> None:
        """Down: the node's kubelet stops (kwok leaves it alone) and it reports Ready
        Unknown, so the node controller taints it and the taint manager evicts its pods; it
        stays down until brought up. Up: kwok takes it back and initialises it Ready."""
        await self.kube.request("PATCH", f"/api/v1/nodes/{node}", content_type=MERGE_PATCH,
                                body={"metadata": {"annotations": {KUBELET_STOPPED: "true" if down else None}}})
        if down:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            condition = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "test harness: kubelet stopped",
                         "lastHeartbeatTime": now, "lastTransitionTime": now}
            await self.kube.request("PATCH", f"/api/v1/nodes/{node}/status", content_type=STRATEGIC_MERGE_PATCH,
                                    body={"status": {"conditions": [condition]}})

    async def marks_written(self, timeout: float = 30.0) -> int:
        """Waits (up to `timeout`; 110 marks at homing's default 20 patches a second take under
        6 s) until homing has marked every replica on a waiting gang's home, and returns how
        many are still unmarked. A night comes hours after the morning; here seconds after, when
        homing, writing its marks at its bounded rate, may not have reached them all: what the
        night measures is the marks' effect."""
        deadline = time.monotonic() + timeout
        while self.recorder.unmarked_on_waiting_homes() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return self.recorder.unmarked_on_waiting_homes()

    async def settle(self, quiet: float = 3.0, at_least: float = 4.0, timeout: float = 90.0,
                     until: Callable[[], bool] | None = None) -> None:
        """Waits until no pod has been created, bound or deleted for `quiet` seconds, no
        inference replica is pending (the scheduler is still making room; a training gang may
        stay pending), the scheduler's workloads have every rank again (a Job re-creates an
        evicted one only after its back-off), `until()` holds when given, and at least
        `at_least` seconds passed: on a loaded machine a step takes longer, not less. `until`
        is for a step whose outcome needs the scheduler to act after the last change (a gang
        bound once room is made): how long the scheduler takes to get there is not homing's part."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            pending = any(p.node is None and not p.leaving and not p.ranked for p in self.recorder.pods.values())
            if (now - start >= at_least and now - max(self.recorder.last_change, start) >= quiet and not pending
                    and self.scheduling.step_over(self.live_ranks(), self.gang_sizes) and (until is None or until())):
                return

    def end_step(self, phase: str) -> dict[str, int]:
        """Records (and returns) each training job's ranks with no bound pod as `phase` ends."""
        bound = self.live_ranks(bound=True)
        unbound = {job: n - len(bound.get(job, ())) for job, n in sorted(self.gang_sizes.items()) if len(bound.get(job, ())) < n}
        if unbound:
            self.recorder.unbound_by_phase[phase] = unbound
        return unbound

    def all_training_bound(self) -> bool:
        """Every rank of every training job has a pod bound to a node."""
        return every_rank(self.live_ranks(bound=True), self.gang_sizes)

    def live_ranks(self, bound: bool = False) -> dict[str, set[str]]:
        """Each training job's ranks that have a pod (bound to a node, if `bound`)."""
        live: dict[str, set[str]] = {}
        for p in self.recorder.pods.values():
            if p.ranked and not p.leaving and (p.node or not bound):
                live.setdefault(p.job, set()).add(p.key.rpartition("/")[2])
        return live

    async def pending_state(self, key_prefix: str, nodes: tuple[str, ...] = ()) -> dict:
        """For a failure message: the key's pods not bound, and the jobs' and PodGroups'
        phases, when a step did not end as the test expected; with `nodes`, also every pod
        of the namespace as the API server has it and those nodes' taints and Ready."""
        jobs = await self.kube.request("GET", self.scheduling.jobs_path.format(ns=NS))
        groups = await self.kube.request("GET", self.scheduling.podgroups_path.format(ns=NS))
        extra: dict = {}
        if nodes:
            pods = await self.kube.request("GET", f"/api/v1/namespaces/{NS}/pods")
            extra["api_pods"] = {
                p["metadata"]["name"]: [(p.get("status") or {}).get("phase"), p["spec"].get("nodeName"),
                                        "deleting" if p["metadata"].get("deletionTimestamp") else "",
                                        (p["metadata"].get("annotations") or {}).get("volcano.sh/job-version")]
                for p in pods.get("items") or ()}
            extra["recorder_pods"] = sorted((p.key, p.node, p.leaving) for p in self.recorder.pods.values() if p.key.startswith(key_prefix))
            for name in nodes:
                node = await self.kube.request("GET", f"/api/v1/nodes/{name}")
                extra[name] = {"taints": [(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()],
                               "ready": [c["status"] for c in (node.get("status") or {}).get("conditions") or () if c["type"] == "Ready"]}
        return {**extra,
            "unbound": sorted(p.key for p in self.recorder.pods.values() if p.key.startswith(key_prefix) and p.node is None),
            "jobs": {j["metadata"]["name"]: (j.get("status") or {}).get("state", {}).get("phase")
                     or [c.get("type") for c in (j.get("status") or {}).get("conditions") or ()] for j in jobs.get("items") or ()},
            "podgroups": {g["metadata"]["name"]: [(g.get("status") or {}).get("phase"),
                                                  [c.get("reason") or c.get("message")
                                                   for c in (g.get("status") or {}).get("conditions") or ()]]
                          for g in groups.get("items") or ()},
        }

    async def placed_on(self, nodes: set[str], key_prefix: str, count: int, create) -> None:
        """Creates a workload (`create()`) while every node but `nodes` is cordoned, so that its
        `count` pods bind there: two runs then start from the same layout. Uncordons after."""
        others = [n for n in self.node_names if n not in nodes]
        await asyncio.gather(*(self.cordon(n, True) for n in others))
        try:
            await create()
            await self.wait_bound(key_prefix, count)
        finally:
            await asyncio.gather(*(self.cordon(n, False) for n in others))

    async def wait_bound(self, key_prefix: str, count: int, timeout: float = 60) -> None:
        """Waits until `count` pods of the prefix are bound (kwok runs a bound pod at once)."""
        async def bound() -> bool:
            return sum(1 for p in self.recorder.pods.values() if p.key.startswith(key_prefix) and p.node and not p.leaving) >= count

        await o.eventually(bound, timeout=timeout, what=f"{count} pods of {key_prefix} bound")

    async def restart_scheduler(self) -> None:
        """Stops the scheduler and starts it again with the same flags: what it held in memory
        alone (MindCluster's plugin: its owner -> rank -> node cache) is lost."""
        await asyncio.to_thread(self.cp.restart, self.scheduling.process)

    async def cordon(self, node: str, on: bool) -> None:
        await self.kube.request("PATCH", f"/api/v1/nodes/{node}", content_type=MERGE_PATCH,
                                body={"spec": {"unschedulable": True if on else None}})

    async def gang_restarts(self) -> int:
        """Training jobs restarted whole, as the scheduler's side counts them."""
        return sum((await self.restarts_by_job()).values())

    async def count_restarts(self, phase: str, before: dict[str, int]) -> dict[str, int]:
        """Records which jobs restarted during `phase` (since `before`); returns the new counts."""
        now = await self.restarts_by_job()
        moved = {job: n - before.get(job, 0) for job, n in now.items() if n > before.get(job, 0)}
        if moved:
            self.recorder.restarts_by_phase[phase] = moved
        return now

    async def restarts_by_job(self) -> dict[str, int]:
        return await self.scheduling.restarts_by_job(self.kube, NS, self.recorder.rank_losses)

    def last_nodes(self, key_prefix: str) -> dict[str, str]:
        """Where the recorder last saw each rank of the prefix bound: rank key -> node."""
        return {k: v for k, v in self.recorder.last_node.items() if k.startswith(key_prefix)}

    def nodes_of(self, key_prefix: str) -> list[str]:
        return sorted({p.node for p in self.recorder.pods.values() if p.node and not p.leaving and p.key.startswith(key_prefix)})

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by the scheduler, the API server and homing: on a machine of
        two cores, whatever homing uses is taken from the others."""
        procs = {name: self.cp.procs.get(name) for name in (self.scheduling.process, "kube-apiserver")}
        procs["homing"] = self.operator.proc if self.operator else None
        return {name: round(process_cpu_seconds(proc.pid), 1) for name, proc in procs.items() if proc and proc.poll() is None}

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.operator:
            self.operator.stop()
        if self.lag_proxy:
            self.lag_proxy.stop()
        if self.kube:
            await self.kube.close()
        self.cp.stop()
        if not os.environ.get("HOMING_E2E_KEEP"):
            subprocess.run(["rm", "-rf", str(self.workdir)], check=False)


def dump(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
