"""behaviour.md "Topology" / 4.3 for the topology job kinds, as properties over random clusters.

Clusters are trees of domains: super-pods holding racks (NodeState topology
(("rack", r), ("superPod", s)) keyed by homing.io/rack-id and homing.io/superpod-id), or
MindCluster multilevel groups (level1 inside level2 inside ...) read from node labels
through TopologySources and a resource-level-config. Nodes are mostly healthy, some
sub-healthy, some unhealthy; some remembered homes are gone. One owner's memory is built
with MemoryIndex.record_bind (the node's topology at bind time) and record_fault.

Pods are super-pod jobs (sp-block / super-pod policies), rack-windowed jobs
(chip8-node8-ra64-sp with ra-block / tp-block and sp-block) and multilevel jobs
(huawei.com/affinity-config). Every node of the snapshot is scored by the decision's terms
the way Kubernetes scores preferred node affinity (helpers.raw_scores / normalise).

Bulk choices come from a random.Random seeded by hypothesis (cheap, replayed from the
seed); the shapes (sizes, block sizes, probabilities) are drawn by hypothesis itself.
"""
from __future__ import annotations

import functools
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field

import jsonpatch
from hypothesis import assume, event, given, note, settings as hsettings, strategies as st

from homing.config import Settings
from homing.engine.cluster.topology.sources import TopologySources
from homing.engine.identity import WorkloadIndex
from homing.engine.memory import MemoryIndex
from homing.engine.model import ClusterSnapshot, Health, NodeState
from homing.engine.placement.decide import Decision, decide

from .helpers import HOSTNAME, NOW, PREFERRED, fresh_uid, node_obj, normalise, owner, pod, raw_scores

H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY
RACK_KEY, SP_KEY = "homing.io/rack-id", "homing.io/superpod-id"
ML_KEYS = tuple(f"topo.example.com/level{i}" for i in range(1, 5))
SUB_HEALTH_LABEL = Settings().labels.sub_health
FAULT_MEMORY = Settings().lifetimes.fault_memory_seconds
DOMAIN_WEIGHTS = Settings().weights.domains  # innermost first: 50, 25, 12
TASK_INDEX = "volcano.sh/task-index"
UP_TO_256 = st.just(256)
POLICY = "huawei.com/schedule_policy"
FAULT_AGES = (0.0, 10.0, FAULT_MEMORY - 1, FAULT_MEMORY, 2 * FAULT_MEMORY)  # the last two have expired


# -- clusters --------------------------------------------------------------------------------

@dataclass
class Cluster:
    flavour: str  # "rack-sp" (NodeState built directly) or "multilevel" (node labels via TopologySources)
    levels: tuple[str, ...]  # physical level names, innermost first
    paths: dict[str, tuple]  # present node -> ((level, value), ...), innermost first
    health: dict[str, Health]
    children: dict  # None (the root) or a domain (level, value) -> its child domains
    nodes_in: dict  # innermost domain -> its nodes
    keyless: bool = False  # rack-sp only: NodeState without label keys, so domains become hostname lists

    @functools.cached_property
    def members(self) -> dict[tuple[str, str], set[str]]:
        out: dict = defaultdict(set)
        for node, path in self.paths.items():
            for dom in path:
                out[dom].add(node)
        return dict(out)

    @functools.cached_property
    def labels(self) -> dict[str, dict[str, str]]:
        """The node labels Kubernetes matches the terms against."""
        keys = {"rack": RACK_KEY, "superPod": SP_KEY, **{f"level{i + 1}": k for i, k in enumerate(ML_KEYS)}}
        return {n: {HOSTNAME: n, **{keys[lvl]: v for lvl, v in path}} for n, path in self.paths.items()}


def _grow(rng: random.Random, levels_outer_first: list[str], fanouts: list[int], per_leaf: int, flavour: str) -> Cluster:
    children: dict = {None: []}
    nodes_in: dict = {}
    paths: dict = {}
    counters: dict = defaultdict(int)

    def value(level: str) -> str:
        counters[level] += 1
        n = counters[level] - 1
        return str(n) if flavour == "rack-sp" else f"{level}-{n}"  # rack ids are unique cluster-wide

    def grow(parent, depth: int, outer: tuple) -> None:
        level = levels_outer_first[depth]
        count = fanouts[0] if depth == 0 else rng.randint(max(1, fanouts[depth] // 2), fanouts[depth])
        for _ in range(count):
            dom = (level, value(level))
            children.setdefault(parent, []).append(dom)
            path = (dom, *outer)
            if depth + 1 < len(levels_outer_first):
                grow(dom, depth + 1, path)
            else:
                names = [f"node-{len(paths) + i}" for i in range(rng.randint(max(1, per_leaf // 2), per_leaf))]
                nodes_in[dom] = names
                for name in names:
                    paths[name] = path

    grow(None, 0, ())
    return Cluster(flavour, tuple(reversed(levels_outer_first)), paths, {}, children, nodes_in)


HEALTH_MIXES = [(1, 0, 0), (8, 1, 1), (8, 1, 1), (20, 1, 1), (4, 2, 2), (1, 1, 3)]  # healthy, sub, unhealthy


@st.composite
def clusters(draw, flavour: str, ml_levels: int = 3) -> Cluster:
    rng = random.Random(draw(st.integers(0, 2**32 - 1), label="cluster seed"))
    big = draw(st.integers(0, 5), label="big") == 0  # one in six: hundreds to a few thousand nodes
    if flavour == "rack-sp":
        top = draw(st.integers(4, 8) if big else st.integers(1, 4), label="super-pods")
        racks = draw(st.integers(4, 8) if big else st.integers(1, 4), label="racks per super-pod")
        per_rack = draw(st.integers(16, 64) if big else st.integers(1, 16), label="nodes per rack")
        cluster = _grow(rng, ["superPod", "rack"], [top, racks], per_rack, flavour)
    else:
        names = [f"level{i}" for i in range(ml_levels, 0, -1)]
        fan = [draw(st.integers(2, 4) if big else st.integers(1, 4), label=f"{n} fan-out") for n in names]
        per_leaf = draw(st.integers(8, 32) if big else st.integers(1, 8), label="nodes per level1 group")
        cluster = _grow(rng, names, fan, per_leaf, flavour)
    mix = draw(st.sampled_from(HEALTH_MIXES), label="health mix")
    cluster.health = {n: rng.choices([H, S, U], weights=mix)[0] for n in cluster.paths}
    return cluster


# -- jobs --------------------------------------------------------------------------------------

@dataclass
class Job:
    kind: str  # the Decision.kind the engine must recognise
    annotations: dict
    levels: tuple[tuple[str, int | None], ...]  # (level name, block size in ranks; None: whole job), innermost first


@st.composite
def rack_sp_jobs(draw) -> Job:
    if draw(st.booleans(), label="rack-windowed"):
        ra_npus = draw(st.sampled_from([4, 8, 16, 32, 64]), label="ra-block")
        ra_nodes = -(-ra_npus // 8)
        ann = {POLICY: "chip8-node8-ra64-sp", draw(st.sampled_from(["ra-block", "tp-block"])): str(ra_npus)}
        if draw(st.integers(0, 4), label="no sp-block") == 0:
            sp_nodes = None  # the whole job is one super-pod block
        else:
            sp_nodes = draw(st.integers(max(1, ra_nodes), max(1, ra_nodes) * 4), label="sp nodes")
            ann["sp-block"] = str(sp_nodes * 8)
        return Job("rack-super-pod", ann, (("rack", ra_nodes), ("superPod", sp_nodes)))
    variant = draw(st.sampled_from(["sp-block", "chip8-node8-sp", "chip2-node8-sp", "chip2-node16-sp", "policy-only"]))
    if variant == "policy-only":
        return Job("super-pod", {POLICY: "chip8-node8-sp"}, (("superPod", None),))
    sp_nodes = draw(st.sampled_from([1, 2, 3, 4, 8, 16, 32]), label="sp nodes")
    per_node = 16 if variant == "chip2-node16-sp" else 8
    ann = {"sp-block": str(sp_nodes * per_node)}
    if variant != "sp-block":
        ann[POLICY] = variant
    return Job("super-pod", ann, (("superPod", sp_nodes),))


@st.composite
def multilevel_jobs(draw, levels: int) -> Job:
    sizes = [draw(st.sampled_from([1, 2, 4, 8]), label="G1")]
    for k in range(1, levels):
        sizes.append(sizes[-1] * draw(st.integers(1, 4), label=f"G{k + 1} / G{k}"))
    config = ",".join(f"level{i + 1}={g}" for i, g in enumerate(sizes))
    ann = {POLICY: "multilevel", "huawei.com/affinity-config": config}
    return Job("multilevel", ann, tuple((f"level{i + 1}", g) for i, g in enumerate(sizes)))


# -- one case: cluster, job, memory, picked rank -------------------------------------------------

@dataclass
class Case:
    cluster: Cluster
    job: Job
    homes: dict[int, str]  # remembered rank -> node (possibly gone)
    bound: dict[int, tuple]  # remembered rank -> topology at bind time
    bound_at: dict[int, float]
    faults: list[tuple[int, str, float]]  # (rank, node, seconds ago)
    picked: int
    max_values: int = 256
    shuffle: int | None = None  # a seed to build the inputs in another order (same content)
    uid: str = field(default_factory=fresh_uid)

    @property
    def own(self) -> str | None:
        return self.homes.get(self.picked)

    @property
    def siblings(self) -> set[str]:
        """Other ranks' homes, never the picked rank's own."""
        return {n for r, n in self.homes.items() if r != self.picked} - {self.own}

    @property
    def active(self) -> set[str]:
        """The picked rank's faults younger than the fault memory (a fault mark hangs off a
        remembered rank; the youngest mark of a node wins)."""
        if self.own is None:
            return set()
        youngest: dict[str, float] = {}
        for r, node, ago in self.faults:
            if r == self.picked:
                youngest[node] = min(ago, youngest.get(node, ago))
        return {n for n, ago in youngest.items() if ago < FAULT_MEMORY}

    def summary(self) -> str:
        c = self.cluster
        counts = {h.value: sum(1 for x in c.health.values() if x is h) for h in (H, S, U)}
        return (
            f"{c.flavour} cluster: {len(c.paths)} nodes {counts}, job {self.job.kind} {self.job.annotations}, "
            f"levels {self.job.levels}, {len(self.homes)} remembered ranks, picked {self.picked} "
            f"(own {self.own}, {'gone' if self.own and self.own not in c.paths else 'present'}), "
            f"faults {[f for f in self.faults if f[0] == self.picked]}, max_values {self.max_values}"
        )


def _place(rng: random.Random, cluster: Cluster, job: Job, n_ranks: int, p_remember: float, p_noise: float,
           p_gone: float, p_stale: float) -> tuple[dict, dict]:
    """Where each remembered rank ran: a job block's ranks mostly share the block's domain at
    every job level; some ranks land anywhere, some nodes are gone since, some changed domain."""
    blocks = dict(job.levels)
    chosen: dict = {}
    every = sorted(cluster.paths)
    homes, bound = {}, {}
    for r in range(n_ranks):
        if rng.random() >= p_remember:
            continue
        parent = None
        for level in reversed(cluster.levels):  # outermost first
            options = cluster.children[parent]
            if level in blocks:
                size = blocks[level]
                key = (level, r // size if size else 0)
                dom = chosen.get(key)
                if dom is None or dom not in options:
                    dom = chosen[key] = rng.choice(options)
            else:
                dom = rng.choice(options)
            parent = dom
        node = rng.choice(cluster.nodes_in[parent])
        if rng.random() < p_noise:
            node = rng.choice(every)
        path = cluster.paths[node]
        if rng.random() < p_stale:
            path = cluster.paths[rng.choice(every)]  # the node was in another domain when the rank bound
        if rng.random() < p_gone:
            node = f"gone-{r}"
            if rng.random() < 0.3:  # its whole domain went with it
                path = tuple((lvl, f"gone-{lvl}-{r}") for lvl, _ in path)
        homes[r], bound[r] = node, path
    return homes, bound


def _mates(case_homes: dict, rank: int, size: int | None) -> list[int]:
    if size is None:
        return sorted(case_homes)
    first = rank // size * size
    return [r for r in range(first, first + size) if r in case_homes]


@st.composite
def cases(draw, flavour: str | None = None, ranks: tuple[int, int] = (0, 200), mode: str = "any",
          max_values=UP_TO_256, keyless: bool = False) -> Case:
    """mode: "any" (mostly a remembered rank), "scale-out" (a rank with no memory whose block
    mates are remembered), "faulted" (a remembered rank with an active fault on a present node)."""
    flavour = flavour or draw(st.sampled_from(["rack-sp", "rack-sp", "multilevel"]), label="flavour")
    if flavour == "rack-sp":
        cluster = draw(clusters("rack-sp"))
        job = draw(rack_sp_jobs())
        cluster.keyless = keyless and draw(st.booleans(), label="keyless")
    else:
        job_levels = draw(st.integers(1, 4), label="job levels")
        cluster = draw(clusters("multilevel", ml_levels=max(job_levels, draw(st.integers(1, 4), label="cluster levels"))))
        job = draw(multilevel_jobs(job_levels))
    rng = random.Random(draw(st.integers(0, 2**32 - 1), label="memory seed"))
    lo, hi = ranks
    n_ranks = draw(st.integers(max(lo, 1 if mode != "any" else 0), hi), label="ranks")
    p_remember = draw(st.sampled_from([1.0, 1.0, 0.9, 0.6, 0.3]), label="p_remember")
    p_noise = draw(st.sampled_from([0.0, 0.05, 0.3, 1.0]), label="p_noise")
    p_gone = draw(st.sampled_from([0.0, 0.05, 0.2, 0.6]), label="p_gone")
    p_stale = draw(st.sampled_from([0.0, 0.0, 0.05]), label="p_stale")
    homes, bound = _place(rng, cluster, job, n_ranks, p_remember, p_noise, p_gone, p_stale)
    present = sorted(cluster.paths)
    biggest = max((s or n_ranks) for _, s in job.levels)

    if mode == "scale-out":
        candidates = [r for r in range(n_ranks + biggest)
                      if r not in homes and any(_mates(homes, r, s) for _, s in job.levels)]
        if not candidates:  # forget one remembered rank that has a remembered block mate
            candidates = [r for r in sorted(homes) if any(len(_mates(homes, r, s)) > 1 for _, s in job.levels)]
            assume(candidates)
        picked = rng.choice(candidates)
        homes.pop(picked, None)
        bound.pop(picked, None)
    elif mode == "faulted":
        assume(homes)
        picked = rng.choice(sorted(homes))
    elif homes and rng.random() < 0.75:
        picked = rng.choice(sorted(homes))
    else:
        picked = draw(st.integers(0, n_ranks + biggest), label="picked")

    faults: list[tuple[int, str, float]] = []
    own = homes.get(picked)
    if own is not None:
        n_faults = rng.choice([0, 0, 1, 2, 6]) if mode != "faulted" else rng.randint(1, 6)
        for _ in range(n_faults):
            roll = rng.random()
            if roll < 0.15:
                node = own
            elif roll < 0.5 and own in cluster.paths:  # in the home's innermost domain
                node = rng.choice(sorted(cluster.members[cluster.paths[own][0]]))
            elif roll < 0.9:
                node = rng.choice(present)
            else:
                node = f"gone-fault-{rng.randint(0, 9)}"
            faults.append((picked, node, rng.choice(FAULT_AGES)))
        if mode == "faulted":
            node = own if rng.random() < 0.3 and own in cluster.paths else rng.choice(present)
            faults.append((picked, node, rng.choice(FAULT_AGES[:3])))
    for r in rng.sample(sorted(homes), k=min(len(homes), rng.choice([0, 2]))):  # other ranks' faults
        if r != picked:
            faults.append((r, rng.choice(present), rng.choice(FAULT_AGES)))
    bound_at = {r: NOW - rng.uniform(60, 86_400) for r in homes}
    return Case(cluster, job, homes, bound, bound_at, faults, picked, draw(max_values, label="max_values"))


# -- running a case ---------------------------------------------------------------------------------

@functools.cache
def _settings(max_values: int) -> Settings:
    config = {"default": {f"level{i + 1}": {"label": key} for i, key in enumerate(ML_KEYS)}}
    return Settings(bounds={"max_term_values": max_values}, topology={"resource_level_config": json.dumps(config)})


def _snapshot(case: Case, order: list[str], settings: Settings) -> ClusterSnapshot:
    c = case.cluster
    if c.flavour == "rack-sp":
        keys = () if c.keyless else (("rack", RACK_KEY), ("superPod", SP_KEY))
        return ClusterSnapshot({n: NodeState(n, c.health[n], c.paths[n], keys) for n in order})
    sources = TopologySources(settings)
    for n in order:
        labels = {k: v for k, v in c.labels[n].items() if k != HOSTNAME}
        if c.health[n] is S:
            labels[SUB_HEALTH_LABEL] = "true"
        sources.node_changed(node_obj(n, ready="False" if c.health[n] is U else "True", labels=labels))
    snap = sources.snapshot
    assert all(snap.nodes[n].topology == c.paths[n] and snap.nodes[n].health is c.health[n] for n in order)
    return snap


def run(case: Case, shuffle: int | None = None) -> tuple[dict, Decision]:
    """Build the inputs (in another order when `shuffle` is given) and decide for the picked rank."""
    settings = _settings(case.max_values)
    order = sorted(case.cluster.paths)
    ranks = sorted(case.homes, key=lambda r: case.bound_at[r])
    if shuffle is not None:
        rng = random.Random(shuffle)
        rng.shuffle(order)
        rng.shuffle(ranks)
    snap = _snapshot(case, order, settings)
    ref = owner(kind="Job", name="job", api_version="batch.volcano.sh/v1alpha1", uid=case.uid)
    index = MemoryIndex()
    for r in ranks:
        index.record_bind(ref, str(r), case.homes[r], case.bound[r], case.bound_at[r])
    for r, node, ago in sorted(case.faults, key=lambda f: -f[2]):  # oldest first
        index.record_fault(ref.key, str(r), node, NOW - ago, FAULT_MEMORY)
    p = pod(name=f"job-worker-{case.picked}", controller=ref,
            annotations={**case.job.annotations, TASK_INDEX: str(case.picked)},
            resources={"huawei.com/Ascend910": "8"})
    d = decide(p, index, WorkloadIndex(), snap, settings, NOW)
    assert d.outcome != "skipped" and d.rank == str(case.picked), d
    assert d.kind == case.job.kind and not d.warnings, (d.kind, d.warnings)
    return p, d


def scores(case: Case, p: dict, d: Decision) -> dict[str, int]:
    patched = jsonpatch.apply_patch(p, d.patch(p))
    preferred = (((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(PREFERRED)) or []
    # the patch carries one term per node set (rules/term.py): every node's sum is the decision's terms'
    raw = raw_scores(preferred, case.cluster.labels)
    assert raw == raw_scores([t.as_k8s() for t in d.terms], case.cluster.labels)
    assert len(preferred) <= len(d.terms)
    return normalise(raw)


def expected_domains(case: Case) -> list[tuple[int, str, str, bool]]:
    """behaviour.md "Topology", independently: for each job level that gets terms (at most three), the domain
    of the majority of the block's remembered ranks (topology at bind time), ties to the
    domain of the lowest rank; only where some node of that domain is still in the cluster.
    (position, level, value, was it a tie)."""
    out = []
    for position, (level, size) in enumerate(case.job.levels[: len(DOMAIN_WEIGHTS)]):
        tally: dict[str, list[int]] = {}
        for r in _mates(case.homes, case.picked, size):
            value = dict(case.bound[r]).get(level)
            if value is not None:
                tally.setdefault(value, []).append(r)
        if not tally:
            continue
        ranked = sorted(tally, key=lambda v: (-len(tally[v]), min(tally[v])))
        tie = len(ranked) > 1 and len(tally[ranked[0]]) == len(tally[ranked[1]])
        if (level, ranked[0]) in case.cluster.members:
            out.append((position, level, ranked[0], tie))
    return out


def domain_terms(d: Decision) -> dict[str, object]:
    return {t.role.split(":", 1)[1]: t for t in d.terms if t.role.startswith("domain:")}


def node_classes(case: Case, d: Decision) -> dict[str, tuple[int, str]]:
    """The class of every healthy or sub-healthy node, and of every fault node: 0 own healthy
    home; i+1 in home domain level i (innermost first) and no sibling's home, then elsewhere;
    then the siblings' homes — claimed, since no pod of the job holds them (a gang restart) —
    by level the same way; last the rank's active fault nodes. Unhealthy nodes that are no
    fault have no place in the order and are left out. A node's level is the innermost of the
    block's home domains it is in."""
    domains = [tuple(name.split("=", 1)) for name in d.domains]
    members = [case.cluster.members.get(dom, set()) for dom in domains]
    own, siblings, active = case.own, case.siblings, case.active
    listed = next((set(t.values) for t in d.terms if t.role == "claimed"), set())
    levels = len(domains)
    out = {}
    for node, health in case.cluster.health.items():
        if node in active:
            out[node] = (2 * levels + 3, "fault")
        elif health is U:
            continue
        elif node == own and health is H:
            out[node] = (0, "home")
        else:
            inside = next((i for i, m in enumerate(members) if node in m), levels)
            if not all(node in m for m in members[inside:]):
                continue  # in an inner home domain outside an outer one: the order assumes they nest
            where = f"level{inside + 1}" if inside < levels else "elsewhere"
            sibling = node in siblings
            if sibling and node not in listed:
                continue  # the claimed list was cut (faults first): this home is left to keep-clear
            out[node] = ((levels + 1) * sibling + inside + 1, where + ("-claimed" if sibling else ""))
    return out


# -- 1. the behaviour.md "Weights" order ------------------------------------------------------------------------

@hsettings(max_examples=120, deadline=None)
@given(case=cases())
def test_scores_follow_the_spec_order_of_node_classes(case: Case):
    note(case.summary())
    p, d = run(case)
    note(f"domains {d.domains}, terms {[(t.role, t.weight, len(t.values)) for t in d.terms]}")
    assert len(case.siblings) <= case.max_values  # the keep-clear list is whole: siblings are classified right
    score = scores(case, p, d)
    classes = node_classes(case, d)
    by_class: dict[int, list[str]] = defaultdict(list)
    for node, (cls, _) in classes.items():
        by_class[cls].append(node)
    event(f"{len(d.domains)} home domain(s); classes present: {len(by_class)}")
    fault_class = 2 * len(d.domains) + 3
    present = sorted(by_class)
    for cls in present:
        if cls != fault_class:  # fault nodes keep their domain and keep-clear weights: no single score
            values = {score[n] for n in by_class[cls]}
            assert len(values) == 1, f"class {classes[by_class[cls][0]][1]} has scores {sorted(values)}"
    for better, worse in zip(present, present[1:]):
        low = min(by_class[better], key=score.__getitem__)
        high = max(by_class[worse], key=score.__getitem__)
        assert score[low] > score[high], (
            f"{classes[low][1]} node {low} scores {score[low]}, not above {classes[high][1]} node {high} ({score[high]})"
        )


# -- 2. unhealthy nodes ---------------------------------------------------------------------------

@hsettings(max_examples=100, deadline=None)
@given(case=cases())
def test_unhealthy_nodes_are_not_the_best(case: Case):
    """behaviour.md "Weights" puts no term on the health of a node that is not the rank's home, so an
    unhealthy stranger ties with healthy strangers (and beats a healthy sibling's home, and
    with no term at all every node scores 0): "never a top scorer" cannot hold in general.
    What does hold:
    (a) when a healthy non-fault node is the rank's home or lies in one of the block's home
        domains and is not claimed, no unhealthy node is among the best (the engine avoids the unhealthy nodes
        of the home domains, an unhealthy home is avoided too);
    (b) an unhealthy node is never the unique best while a healthy non-fault node that is not
        another rank's home exists."""
    note(case.summary())
    p, d = run(case)
    score = scores(case, p, d)
    health, active, siblings = case.cluster.health, case.active, case.siblings
    domains = [tuple(name.split("=", 1)) for name in d.domains]
    in_domains = set().union(*(case.cluster.members.get(dom, set()) for dom in domains))
    avoid = next((set(t.values) for t in d.terms if t.role == "avoid"), set())
    unhealthy_in_domains = {n for n in in_domains if health[n] is U}
    if not d.truncated:
        assert unhealthy_in_domains <= avoid
    good = [n for n, h in health.items() if h is H and n not in active]
    top = max(score.values())
    best = {n for n, s in score.items() if s == top}
    # a sibling's home is claimed (no pod of the job holds it) and ranks below every unclaimed node
    anchored = [n for n in good if (n in in_domains and n not in siblings) or n == case.own]
    unhealthy_best = sorted(n for n in best if health[n] is U and (n in avoid or n not in unhealthy_in_domains))
    event(f"anchored healthy node: {bool(anchored)}")
    if anchored:
        assert not unhealthy_best, f"unhealthy {unhealthy_best[:3]} among the best ({top}) next to healthy {anchored[:3]}"
    if any(n not in siblings for n in good) and len(best) == 1:
        (only,) = best
        assert health[only] is not U or only in unhealthy_in_domains - avoid, f"unhealthy {only} is the unique best"


# -- 3. determinism ----------------------------------------------------------------------------------

@hsettings(max_examples=60, deadline=None)
@given(case=cases(), shuffle=st.integers(0, 2**32 - 1))
def test_same_inputs_same_decision(case: Case, shuffle: int):
    """Twice from the same inputs, and once more with the nodes and binds fed in another order:
    the same terms, annotations and patch."""
    note(case.summary())
    p, d = run(case)
    _, again = run(case)
    _, shuffled = run(case, shuffle=shuffle)
    for other in (again, shuffled):
        assert other.terms == d.terms
        assert other.annotations() == d.annotations()
        assert other.patch(p) == d.patch(p)


# -- 4. bounded lists, at most three domain terms ---------------------------------------------------------

@hsettings(max_examples=80, deadline=None)
@given(case=cases(ranks=(0, 1500), max_values=st.sampled_from([1, 2, 5, 17, 256]), keyless=True))
def test_term_lists_are_bounded_and_domain_terms_at_most_three(case: Case):
    note(case.summary())
    _, d = run(case)
    limit = case.max_values
    for t in d.terms:
        assert len(t.values) <= limit, (t.role, len(t.values))
        assert len(set(t.values)) == len(t.values), t.role
    domain_roles = [t.role for t in d.terms if t.role.startswith("domain:")]
    assert len(domain_roles) <= 3 and len(domain_roles) == len(set(domain_roles)) == len(d.domains)
    # the truncation flag says whether any list was cut
    c = case.cluster
    domains = [tuple(name.split("=", 1)) for name in d.domains]
    unhealthy_home = {case.own} if case.own and c.health.get(case.own) is U else set()
    unhealthy_in = {n for dom in domains for n in c.members.get(dom, ()) if c.health[n] is U}
    wanted = {
        "keep-clear": len(case.siblings),
        "avoid": len(unhealthy_home | case.active | unhealthy_in),
        # the avoided nodes and the siblings' homes, all claimed (no pod of the job holds one)
        "claimed": len(unhealthy_home | case.active | unhealthy_in | case.siblings),
        **{f"domain:{lvl}": len(c.members[(lvl, v)]) if c.keyless else 1 for lvl, v in domains},
    }
    event(f"truncated={d.truncated}, keyless={c.keyless}")
    assert d.truncated == any(n > limit for n in wanted.values()), wanted
    assert ('"truncated":true' in d.annotations()["homing.io/decision"]) == d.truncated


# -- 5. scale-out: a rank with no memory gets its block's domains ----------------------------------------------

@hsettings(max_examples=120, deadline=None)
@given(case=cases(mode="scale-out"))
def test_rank_without_memory_goes_to_its_block_mates_domains(case: Case):
    note(case.summary())
    assert case.own is None
    _, d = run(case)
    expected = expected_domains(case)
    event(f"{len(expected)} expected domain(s); tie: {any(tie for *_, tie in expected)}")
    assert d.home is None and d.reason == "no-memory"
    assert d.domains == [f"{lvl}={v}" for _, lvl, v, _ in expected]
    assert d.outcome == ("domain" if expected else "none")
    terms = domain_terms(d)
    assert set(terms) == {lvl for _, lvl, _, _ in expected}
    for position, level, value, _ in expected:
        t = terms[level]
        assert t.weight == DOMAIN_WEIGHTS[position] and t.operator.value == "In"
        members = sorted(case.cluster.members[(level, value)])
        labelled = {"rack": RACK_KEY, "superPod": SP_KEY, **{f"level{i + 1}": k for i, k in enumerate(ML_KEYS)}}
        if case.cluster.keyless:
            assert (t.key, list(t.values)) == (HOSTNAME, members[: case.max_values])
        else:
            assert (t.key, t.values) == (labelled[level], (value,))


# -- 6. a faulted rank --------------------------------------------------------------------------------------

@hsettings(max_examples=100, deadline=None)
@given(case=cases(mode="faulted"))
def test_fault_nodes_last_but_domain_terms_kept(case: Case):
    note(case.summary())
    active = case.active
    present_faults = sorted(n for n in active if n in case.cluster.paths)
    assume(present_faults)
    p, d = run(case)
    event(f"home faulted: {case.own in active}")
    if case.own in active:
        assert d.reason == "home-faulted" and d.home is None and not any(t.role == "home" for t in d.terms)
    expected = expected_domains(case)
    assert d.domains == [f"{lvl}={v}" for _, lvl, v, _ in expected]
    assert set(domain_terms(d)) == {lvl for _, lvl, _, _ in expected}
    score = scores(case, p, d)
    healthy = [n for n, h in case.cluster.health.items() if h is H and n not in active]
    if healthy:
        worst_healthy = min(healthy, key=score.__getitem__)
        best_fault = max(present_faults, key=score.__getitem__)
        assert score[best_fault] < score[worst_healthy], (
            f"fault node {best_fault} scores {score[best_fault]}, healthy {worst_healthy} {score[worst_healthy]}"
        )
