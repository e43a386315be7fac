"""The admission pipeline: scope -> identity -> strategy -> patch. Pure: it reads the
index and snapshot it is given and returns a Decision; the webhook applies it."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from itertools import islice
from typing import Any

from pydantic import BaseModel, Field

from homing.config import Settings
from homing.engine.cluster.images import pod_images
from homing.engine.identity import WorkloadIndex, resolve_owner, resolve_rank
from homing.engine.identity.accelerators import AcceleratorRequest, accelerator_request
from homing.engine.identity.generation import pod_generation
from homing.engine.identity.pool_group import pool_group
from homing.engine.identity.scope import DECISION_ANNOTATION, HOME_ANNOTATION, out_of_scope
from homing.engine.memory.entries import OwnerMemory
from homing.engine.memory.index import MemoryIndex
from homing.engine.memory.loads import pod_load
from homing.engine.memory.siblings import sibling_homes
from homing.engine.model import ClusterSnapshot, Term
from homing.engine.placement.beyond_home import (
    BeyondHome,
    displacement,
    eviction_victims,
    free_room,
    nothing_free,
    vacant_homes,
    warm_nodes,
)
from homing.engine.placement.claimed import claimed_homes, held_for_a_restart, others_claims, yielded_claims
from homing.engine.placement.job_kinds.facts import group_name, job_facts
from homing.engine.placement.job_kinds.levels import NODE, JobTopology
from homing.engine.placement.job_kinds.select import job_topology
from homing.engine.placement.patch import affinity_patch
from homing.engine.placement.rules.image_warm import image_keys
from homing.engine.placement.strategies import Placement, RankContext, node_strategy, pool_strategy
from homing.engine.placement.strategies.blocks import block_domains

PodGroups = Mapping[tuple[str, str], dict[str, Any]]  # (namespace, name) -> PodGroup


class Decision(BaseModel):
    outcome: str  # metric label: home, domain, pool, none, skipped (error is the adapter's)
    reason: str
    kind: str = "node"
    owner: str | None = None
    owner_uid: str | None = None
    owner_key: str | None = None  # namespace/UID: the index key
    rank: str | None = None
    home: str | None = None
    domains: list[str] = Field(default_factory=list)
    avoided: list[str] = Field(default_factory=list)
    truncated: bool = False
    terms: list[Term] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    promise: str | None = None
    prefer: list[str] = Field(default_factory=list)  # behaviour.md "Beyond the home" preferences that made a term
    victim: str | None = None  # behaviour.md "Beyond the home": the workload whose nodes the pod prefers to displace
    burst: Any = Field(default=None, exclude=True)  # the owner's burst state, kept by the adapter

    def annotations(self, observe: bool = False) -> dict[str, str]:
        record: dict[str, object] = {"owner": self.owner, "rank": self.rank, "home": self.home, "reason": self.reason}
        if observe:
            record["observe"] = True  # what homing would have preferred; no term was added
        if self.kind != "node":
            record["kind"] = self.kind
        if self.domains:
            record["domains"] = self.domains
        if self.avoided:
            record["avoid"] = self.avoided
        if self.truncated:
            record["truncated"] = True
        if self.prefer:
            record["prefer"] = self.prefer
        if self.victim:
            record["displace"] = self.victim
        out = {DECISION_ANNOTATION: json.dumps(record, separators=(",", ":"), sort_keys=True)}
        if self.home:
            out[HOME_ANNOTATION] = self.home
        return out

    def patch(self, pod: dict[str, Any], observe: bool = False) -> list[dict[str, Any]]:
        """The JSON patch; `observe` (behaviour.md "Admission", observe-only): the annotations
        alone, no affinity term."""
        if self.outcome == "skipped":
            return []
        return affinity_patch(pod, [] if observe else self.terms, self.annotations(observe))


def _outcome(placement: Placement) -> str:
    if placement.promise:
        return "pool"
    if placement.home:
        return "home"
    return "domain" if placement.domains else "none"


def job_npus(snapshot: ClusterSnapshot, nodes: list[str]) -> int | None:
    """Accelerators per node of the job's nodes: the rank's home first, else the first
    other remembered node that still reports them (a job runs on one kind of node)."""
    for node in nodes:
        state = snapshot.nodes.get(node)
        if state is not None and state.npus:
            return state.npus
    return None


def topology_of(
    pod: dict[str, Any], podgroups: PodGroups, snapshot: ClusterSnapshot, settings: Settings, nodes: list[str],
    request: AcceleratorRequest | None = None,
) -> JobTopology:
    """The pod's job kind and levels, from the pod and its PodGroup (behaviour.md "Topology").
    `nodes`: the job's remembered nodes, the rank's own home first."""
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    name = group_name(pod)
    podgroup = podgroups.get((namespace, name)) if name else None
    facts = job_facts(pod, podgroup, tuple(settings.scope.resource_prefixes), job_npus(snapshot, nodes), request)
    return job_topology(facts, snapshot.max_tier)


def beyond_home(
    pod: dict[str, Any], index: MemoryIndex, snapshot: ClusterSnapshot, settings: Settings, owner_key: str, rank_key: str | None,
    own_home: str | None, now: float, siblings: tuple[str, ...] | None = None, generation: int | None = None,
    request: AcceleratorRequest | None = None,
) -> BeyondHome:
    """behaviour.md "Beyond the home" candidates, as configured: homes claimed by others, warm nodes, vacant
    homes to keep clear of, and when nothing is free the one workload to displace."""
    p, limit = settings.preferences, settings.bounds.max_term_values
    rankless = rank_key is None
    others = others_claims(index, owner_key, now) if p.claimed_homes else {}  # one pass, read by three rules
    claimed = claimed_homes(index, owner_key, siblings or (), own_home, others, limit, generation) if p.claimed_homes else ()
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    images, reported = pod_images(pod), not p.image_warm_namespace_only
    # behaviour.md "Image labels": labels are the kubelets' reports, so never on tenant-strict clusters
    keys = image_keys(images, snapshot, settings.labels.image_prefix) if p.image_labels and p.image_warm and reported else ()
    if claimed and index.restart_hold > 0:
        # Pulls first: a home kept only for a gang between its pods (it may never come back)
        # goes to a pod whose image it already holds, at no pull for that pod.
        held = held_for_a_restart(index, others, now)
        warm_for_me = set(warm_nodes(images, snapshot, index, limit, namespace, (), reported)) if held else set()
        claimed = tuple(n for n in claimed if not (n in held and n in warm_for_me))
    me = pod_load(pod, owner_key, tuple(settings.scope.resource_prefixes), request)
    evicting = nothing_free(me, snapshot, index, now)
    found = eviction_victims(me, index, snapshot) if index.lower_priority_than(me.priority) else None
    can_evict = found is not None and bool(found.nodes)
    displace, victim, burst = (
        displacement(me, index, found, now, evicting) if found is not None and can_evict and p.displace_few else ((), None, None)
    )
    # When the scheduler will evict with no victim named, "not a vacant home" would point
    # it at nodes whose owners are running there: the opposite of displacing few.
    keep_clear = p.vacant_homes and (victim is not None or not (evicting and can_evict))
    # Pulls first: before a running workload, the homes of owners waiting at a lower priority.
    yielded = yielded_claims(index, others, me.priority, limit) if victim is not None else ()
    if yielded:
        claimed = tuple(n for n in claimed if n not in yielded)
    vacant = vacant_homes(index, owner_key if rankless else None, limit) if keep_clear else ()
    return BeyondHome(
        # with image labels the term asks the scheduler, not a list: none is walked
        warm=warm_nodes(images, snapshot, index, limit, namespace, claimed, reported=reported) if p.image_warm and not keys else (),
        image_keys=keys,
        sick_holders=tuple(n for n in snapshot.unhealthy if all(n in snapshot.labelled[k] for k in keys)) if keys else (),
        claimed=claimed,
        keep_off=p.claimed_homes,
        vacant=tuple(n for n in vacant if n not in yielded),
        displace=displace,
        free=(*yielded, *free_room(me, snapshot, index, limit)) if displace and p.free_room else (),
        victim=victim,
        burst=burst,
    )


def decide(
    pod: dict[str, Any],
    index: MemoryIndex,
    workloads: WorkloadIndex,
    snapshot: ClusterSnapshot,
    settings: Settings,
    now: float,
    podgroups: PodGroups | None = None,
    may_promise: Callable[[str, str], bool] | None = None,
) -> Decision:
    """`may_promise(owner_key, node)`: whether this replica may promise the node (behaviour.md "Admission",
    several replicas; engine/replicas/shares.py). None: a lone replica promises any node."""
    # the pod's accelerator request, read once: scope, its load and its job's block sizes all need it
    request = accelerator_request(pod, settings.scope.resource_prefixes)
    skip = out_of_scope(pod, settings.scope.resource_prefixes, request)
    if skip:
        return Decision(outcome="skipped", reason=skip)
    owner = resolve_owner(pod, workloads)
    if owner is None:
        return Decision(outcome="skipped", reason="no-controller")
    rank_result = resolve_rank(pod, owner.kind, settings.bounds.max_rank_part)
    generation = pod_generation(pod)
    warnings = [w for w in (rank_result.warning, generation.warning) if w]
    memory = index.owner(owner.key)
    hostname = settings.labels.hostname
    topology = NODE
    rank = rank_result.rank
    rank_key = None if rank is None else rank.key
    own_entry = memory.ranks.get(rank_key) if memory is not None and rank_key is not None else None
    own_home = own_entry.node if own_entry else None
    # the sibling walk, once: the keep-clear term and the claimed homes both read it
    siblings = None if rank is None else sibling_homes(memory, rank.index, own_home, settings.bounds.max_term_values,
                                                       index.sibling_runs)
    beyond = beyond_home(pod, index, snapshot, settings, owner.key, rank_key, own_home, now,
                         siblings[0] if siblings else None, generation.value, request)
    if rank is None:
        memory = group_pool(memory, pool_group(pod))
        taken = index.occupied_nodes(owner.key) | index.promised.nodes(owner.key, now)
        w = settings.weights
        placement = pool_strategy(
            memory, snapshot, taken, w.pool_home, w.pool_other, hostname, settings.bounds.max_term_values, beyond, w,
            None if may_promise is None else (lambda node: may_promise(owner.key, node)),
        )
    else:
        entry = memory.ranks.get(rank.key) if memory else None
        nodes = ([entry.node] if entry else []) + (list(islice(memory.home_counts, 8)) if memory else [])
        topology = topology_of(pod, podgroups or {}, snapshot, settings, nodes, request)
        warnings.extend(topology.warnings)
        ctx = RankContext(
            rank=rank,
            memory=memory,
            snapshot=snapshot,
            weights=settings.weights,
            hostname_key=hostname,
            max_values=settings.bounds.max_term_values,
            fault_memory=settings.lifetimes.fault_memory_seconds,
            now=now,
            beyond=beyond,
            runs=index.sibling_runs,
            siblings=siblings,
        )
        placement = node_strategy(ctx, block_domains(ctx, topology))
    return Decision(
        outcome=_outcome(placement),
        reason=placement.reason,
        kind=topology.kind,
        owner=owner.display,
        owner_uid=owner.uid,
        owner_key=owner.key,
        rank=rank_result.rank.key if rank_result.rank else None,
        home=placement.home,
        domains=placement.domains,
        avoided=list(placement.avoided),
        truncated=placement.truncated,
        terms=placement.terms,
        warnings=warnings,
        promise=placement.promise,
        prefer=preferences_used(placement.terms, beyond),
        victim=beyond.victim if "displace" in {t.role for t in placement.terms} else None,
        burst=beyond.burst,
    )


def group_pool(memory: OwnerMemory | None, group: str | None) -> OwnerMemory | None:
    """The owner's memory seen by a pod of one pool group: only that group's homes (behaviour.md "Identity")."""
    if memory is None or group is None:
        return memory
    return replace(memory, pool={node: e for node, e in memory.pool.items() if e.group == group})


def preferences_used(terms: list[Term], beyond: BeyondHome) -> list[str]:
    """What the decision annotation says of behaviour.md "Beyond the home": which preferences made a term."""
    roles = {t.role for t in terms}
    used = ["image-warm"] if "image-warm" in roles else []
    if "displace" in roles:
        used.append("displace-few")
    if beyond.vacant and "keep-clear" in roles:
        used.append("vacant-homes")
    if beyond.claimed and "claimed" in roles:
        used.append("claimed-homes")
    return used
