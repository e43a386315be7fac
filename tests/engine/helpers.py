"""Small builders shared by the engine tests: pods, owners, memories, snapshots, nodes,
and an independent implementation of Kubernetes' preferred node-affinity scoring."""
from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterable, Mapping

from homing.config import Settings
from homing.engine.memory.entries import FaultMark, OwnerMemory, PoolEntry, RankEntry, rank_index
from homing.engine.model import ClusterSnapshot, Health, NodeState, OwnerRef, Rank
from homing.engine.placement.strategies import RankContext

HOSTNAME = "kubernetes.io/hostname"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NOW = 1_800_000_000.0  # a fixed "now" (2027-01-15); every engine call takes it explicitly

_uids = itertools.count()


def fresh_uid(prefix: str = "uid") -> str:
    """A uid no other test uses, so that no test depends on state keyed by another's owner."""
    return f"{prefix}-{next(_uids)}"


def owner(kind: str = "StatefulSet", name: str = "work", namespace: str = "ns", uid: str | None = None,
          api_version: str = "apps/v1") -> OwnerRef:
    return OwnerRef(api_version=api_version, kind=kind, name=name, namespace=namespace, uid=uid or fresh_uid())


def owner_ref(ref: OwnerRef, controller: bool | None = True) -> dict:
    """The ownerReferences entry pointing at `ref`."""
    out = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if controller is not None:
        out["controller"] = controller
    return out


def pod(
    name: str = "work-0",
    namespace: str = "ns",
    controller: OwnerRef | None = None,
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    resources: Mapping[str, object] | None = None,
    node_name: str | None = None,
    affinity: dict | None = None,
    uid: str = "pod-uid",
) -> dict:
    """A pod dict as the admission request carries it. `resources` go to the first
    container's limits; default one NVIDIA GPU."""
    meta: dict = {"name": name, "namespace": namespace, "uid": uid}
    if controller is not None:
        meta["ownerReferences"] = [owner_ref(controller)]
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    if labels is not None:
        meta["labels"] = dict(labels)
    limits = {"nvidia.com/gpu": "1"} if resources is None else dict(resources)
    spec: dict = {"containers": [{"name": "main", "image": "train:1", "resources": {"limits": limits}}]}
    if node_name is not None:
        spec["nodeName"] = node_name
    if affinity is not None:
        spec["affinity"] = copy.deepcopy(affinity)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def bind(p: dict, node: str) -> dict:
    """`p` as a scheduler's binding leaves it: spec.nodeName and the PodScheduled condition
    (what makes a pod hold its node: behaviour.md "Tenants")."""
    p["spec"]["nodeName"] = node
    status = p.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    status["conditions"].append({"type": "PodScheduled", "status": "True"})
    return p


def rank(key: str) -> Rank:
    tail = key.rsplit("/", 1)[-1]
    return Rank(key=key, index=int(tail), source="test")


def memory(
    ref: OwnerRef | None = None,
    ranks: Mapping[str, str] | None = None,
    faults: Mapping[str, Iterable[tuple[str, float]]] | None = None,
    pool: Mapping[str, tuple[float, bool]] | None = None,
    last_seen: float = NOW,
    warm: Iterable[str] = (),
) -> OwnerMemory:
    """An owner memory: `ranks` rank -> node, `faults` rank -> [(node, at)], `pool`
    node -> (last_used, warm), `warm` the ranks marked warm."""
    warm = set(warm)
    faults = faults or {}
    entries = {}
    for key, node in (ranks or {}).items():
        marks = [FaultMark(node=n, at=at) for n, at in faults.get(key, ())]
        entries[key] = RankEntry(node=node, bound_at=last_seen, warm=key in warm, faults=marks or None)
    unknown = set(faults) - set(entries)
    assert not unknown, f"faults for ranks without a home: {unknown}"
    # ranks go in through the constructor: OwnerMemory derives its sibling indexes from them
    mem = OwnerMemory(owner=ref or owner(), last_seen=last_seen, ranks=entries)
    for node, (last_used, is_warm) in (pool or {}).items():
        mem.pool[node] = PoolEntry(last_used=last_used, warm=is_warm)
    return mem


def assert_derived_consistent(mem: OwnerMemory) -> None:
    """The derived sibling indexes of an owner memory agree with its ranks."""
    assert mem.home_counts == Counter(e.node for e in mem.ranks.values()), "home_counts out of sync"
    by_index: dict[int, list[str]] = {}
    for key in mem.ranks:
        by_index.setdefault(rank_index(key), []).append(key)
    got = {i: sorted(keys) for i, keys in mem.keys_by_index.items()}
    assert got == {i: sorted(keys) for i, keys in by_index.items()}, "keys_by_index out of sync"


def snapshot(nodes: Mapping[str, Health] | Iterable[str] = (), topology: Mapping[str, tuple] | None = None) -> ClusterSnapshot:
    """Nodes by name; an iterable of names means all healthy."""
    if not isinstance(nodes, Mapping):
        nodes = {n: Health.HEALTHY for n in nodes}
    topology = topology or {}
    return ClusterSnapshot({n: NodeState(n, h, topology.get(n, ())) for n, h in nodes.items()})


def context(key: str, mem: OwnerMemory | None, snap: ClusterSnapshot, settings: Settings | None = None,
            now: float = NOW, **extra) -> RankContext:
    s = settings or Settings()
    return RankContext(**extra,
        rank=rank(key),
        memory=mem,
        snapshot=snap,
        weights=s.weights,
        hostname_key=s.labels.hostname,
        max_values=s.bounds.max_term_values,
        fault_memory=s.lifetimes.fault_memory_seconds,
        now=now,
    )


def node_obj(name: str = "n1", ready: str | None = "True", taints: Iterable[str] = (), unschedulable: bool | None = None,
             labels: Mapping[str, str] | None = None) -> dict:
    """A Node object; `ready` None leaves the Ready condition out."""
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    spec: dict = {}
    if taints:
        spec["taints"] = [{"key": k, "effect": "NoSchedule"} for k in taints]
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    return {
        "metadata": {"name": name, "labels": {HOSTNAME: name, **(labels or {})}},
        "spec": spec,
        "status": {"conditions": conditions},
    }


def by_role(terms) -> dict:
    """Terms by role (each strategy emits at most one term of a role, but for the claimed
    weight, which two terms with the same list carry: here the first, its weight summed)."""
    out = {}
    for t in terms:
        if t.role == "claimed" and "claimed" in out:
            first = out["claimed"]
            assert t.values == first.values, "claimed terms list different nodes"
            out["claimed"] = first.model_copy(update={"weight": first.weight + t.weight})
            continue
        assert t.role not in out, f"two {t.role} terms"
        out[t.role] = t
    return out


# -- Kubernetes' NodeAffinity scoring, written from its documented behaviour ----------------

def _expression_matches(op: str, key: str, values: frozenset, labels: Mapping[str, str]) -> bool:
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {op} not expected here")


def raw_scores(preferred: list[dict], node_labels: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """For each node: the sum of the weights of the preferred terms whose matchExpressions
    all match the node's labels (kubernetes.io/hostname=<name> is added to every node)."""
    terms = [
        (
            term["weight"],
            [(e["operator"], e["key"], frozenset(e.get("values") or ())) for e in term["preference"].get("matchExpressions") or ()],
        )
        for term in preferred
    ]
    scores = {}
    for name, labels in node_labels.items():
        labels = {**labels, HOSTNAME: name}
        scores[name] = sum(
            weight for weight, exprs in terms if exprs and all(_expression_matches(*e, labels) for e in exprs)
        )
    return scores


def normalise(scores: Mapping[str, int]) -> dict[str, int]:
    """framework.DefaultNormalizeScore(100, reverse=false): score * 100 // max, all 0 when max is 0."""
    best = max(scores.values(), default=0)
    if best == 0:
        return {n: 0 for n in scores}
    return {n: s * 100 // best for n, s in scores.items()}


def k8s_scores(preferred: list[dict], nodes: Iterable[str]) -> dict[str, int]:
    return normalise(raw_scores(preferred, {n: {} for n in nodes}))


# -- topology builders (job kinds, block domains) ---------------------------------------------

NPU = "huawei.com/Ascend910"


def npu_pod(
    name: str = "job-0",
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    npus: int = 8,
    node_selector: Mapping[str, str] | None = None,
    controller: OwnerRef | None = None,
    resource: str = NPU,
) -> dict:
    """An Ascend pod: `npus` of `resource` in the first container's requests and limits
    (the API server has defaulted requests from limits before admission)."""
    p = pod(name=name, controller=controller, annotations=annotations, labels=labels, resources={resource: str(npus)})
    resources = p["spec"]["containers"][0]["resources"]
    resources["requests"] = dict(resources["limits"])
    if node_selector is not None:
        p["spec"]["nodeSelector"] = dict(node_selector)
    return p


def podgroup(annotations: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
             name: str = "pg", namespace: str = "ns", **spec) -> dict:
    """A Volcano PodGroup; `spec` as keyword arguments (minMember=4, networkTopology={...})."""
    meta: dict = {"name": name, "namespace": namespace}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": dict(spec)}


def topo_memory(ranks: Mapping[str, tuple], ref: OwnerRef | None = None, last_seen: float = NOW) -> OwnerMemory:
    """An owner memory whose ranks carry a topology: rank -> (node, path) or (node, path, group)."""
    entries = {}
    for key, (node, path, *group) in ranks.items():
        entries[key] = RankEntry(node=node, bound_at=last_seen, topology=tuple(path), group=group[0] if group else None)
    return OwnerMemory(owner=ref or owner(), last_seen=last_seen, ranks=entries)
