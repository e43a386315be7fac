"""behaviour.md "Weights" as properties: score random clusters the way Kubernetes scores preferred node
affinity (helpers.raw_scores / normalise) and check the order the terms must produce.

Kubernetes: each node gets the sum of the weights of the preferred terms it matches (a
node's labels always include kubernetes.io/hostname=<name>); NodeAffinity's NormalizeScore
then maps every node to score * 100 // max_score (all 0 when max_score is 0)."""
from __future__ import annotations

import random
from dataclasses import dataclass

import jsonpatch
from hypothesis import event, given, settings as hsettings, strategies as st

from homing.config import Bounds, Settings, Weights
from homing.engine.identity import WorkloadIndex
from homing.engine.memory import MemoryIndex
from homing.engine.memory.siblings import sibling_homes
from homing.engine.model import Health
from homing.engine.placement.beyond_home import BeyondHome
from homing.engine.placement.claimed import claimed_homes, others_claims
from homing.engine.placement.decide import decide
from homing.engine.placement.strategies import node_strategy
from homing.engine.placement.weights import node_classes, order_violations

from .helpers import NOW, PREFERRED, context, k8s_scores, memory, normalise, owner, pod, snapshot

H, S, U = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY
FAULT_MEMORY = 3600.0
SETTINGS = {m: Settings(bounds=Bounds(max_term_values=m)) for m in (256, 1, 2, 5, 17)}


@dataclass
class Scenario:
    nodes: dict  # name -> Health (present nodes)
    ranks: dict  # rank index -> node (may be a gone node)
    picked: int
    faults: list  # (node, seconds ago) of the picked rank
    max_values: int

    @property
    def own(self):
        return self.ranks.get(self.picked)

    @property
    def siblings(self) -> set:
        """Other ranks' homes, never the picked rank's own home."""
        return {n for r, n in self.ranks.items() if r != self.picked} - {self.own}

    @property
    def active(self) -> set:
        return {n for n, ago in self.faults if ago < FAULT_MEMORY}


@st.composite
def scenarios(draw) -> Scenario:
    rng = random.Random(draw(st.integers(0, 2**32)))  # bulk choices: cheap, and replayed from the seed
    n_nodes = draw(st.integers(1, 300))
    names = [f"node-{i}" for i in range(n_nodes)]
    weights = draw(st.sampled_from([(1, 0, 0), (8, 1, 1), (8, 1, 1), (4, 2, 2), (1, 1, 3)]))  # healthy, sub, unhealthy
    nodes = {n: rng.choices([H, S, U], weights=weights)[0] for n in names}
    gone = [f"gone-{i}" for i in range(draw(st.integers(0, 5)))]
    candidates = names + gone
    n_ranks = draw(st.one_of(st.integers(0, 40), st.integers(250, 400)))
    spread = draw(st.sampled_from([1, 1, 1, 7, 1000]))  # 1: dense rank indexes; else sparse
    remembered = rng.sample(range(n_ranks + 3), k=rng.choice([n_ranks, n_ranks, rng.randint(0, n_ranks)]))
    ranks = {r * spread: rng.choice(candidates) for r in remembered}
    if ranks and rng.random() < 0.75:
        picked = rng.choice(sorted(ranks))
    else:
        picked = draw(st.integers(0, (n_ranks + 3) * spread))
    own = ranks.get(picked)
    others = [n for n in candidates if n != own] or candidates
    faults = []
    for _ in range(rng.choice([0, 0, 1, 2, 6])):
        node = own if own and rng.random() < 0.1 else rng.choice(others)
        faults.append((node, rng.choice([0.0, 10.0, FAULT_MEMORY - 1, FAULT_MEMORY, 2 * FAULT_MEMORY])))
    max_values = draw(st.sampled_from([256, 256, 256, 1, 2, 5, 17]))
    return Scenario(nodes, ranks, picked, faults, max_values)


def _decide(sc: Scenario, uid: str | None = None):
    ref = owner(kind="StatefulSet", name="w", uid=uid)
    faults = {str(sc.picked): [(n, NOW - ago) for n, ago in sc.faults]} if sc.own is not None else None
    mem = memory(ref, ranks={str(r): n for r, n in sc.ranks.items()}, faults=faults)
    index = MemoryIndex()
    index.adopt(mem)
    p = pod(name=f"w-{sc.picked}", controller=ref)
    d = decide(p, index, WorkloadIndex(), snapshot(sc.nodes), SETTINGS[sc.max_values], NOW)
    return p, d, mem


def _index_of(mem) -> MemoryIndex:
    index = MemoryIndex()
    index.adopt(mem)
    return index


def _nearest_homes(sc: Scenario, limit: int) -> set:
    """Reference for a cut keep-clear list: other ranks' homes taken nearest rank first
    (lower rank on a tie) until `limit` distinct nodes."""
    kept: list = []
    for r in sorted(sc.ranks, key=lambda r: (abs(r - sc.picked), r)):
        node = sc.ranks[r]
        if node != sc.own and node not in kept:
            kept.append(node)
            if len(kept) == limit:
                break
    return set(kept)


@hsettings(max_examples=300, deadline=None)
@given(sc=scenarios())
def test_scores_keep_the_spec_order(sc: Scenario):
    p, d, mem = _decide(sc)
    assert d.outcome in {"home", "none"} and d.rank == str(sc.picked)
    own = sc.own
    active = sc.active if own is not None else set()  # faults hang off the rank's entry
    siblings = sc.siblings
    patched = jsonpatch.apply_patch(p, d.patch(p))
    preferred = (((patched["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(PREFERRED)) or []
    scores = k8s_scores(preferred, sc.nodes)
    terms = {t.role: t for t in d.terms}
    keep = set(terms["keep-clear"].values) if "keep-clear" in terms else set()
    avoid = set(terms["avoid"].values) if "avoid" in terms else set()
    limit = sc.max_values
    event(f"outcome={d.outcome} reason={d.reason}")
    event(f"truncated={d.truncated}")

    # (f) the keep-clear term never lists the rank's own home; its list is the siblings' homes, bounded
    assert own is None or own not in keep
    if len(siblings) <= limit:
        assert keep == siblings
    else:
        assert keep == _nearest_homes(sc, limit) and d.truncated
    # the avoid list: the active faults and an unhealthy home, bounded, the unhealthy home kept first
    unhealthy_home = {own} if own is not None and sc.nodes.get(own) is U else set()
    wanted_avoid = unhealthy_home | active
    if len(wanted_avoid) <= limit:
        assert avoid == wanted_avoid
    else:
        assert len(avoid) == limit and avoid <= wanted_avoid and unhealthy_home <= avoid and d.truncated

    # (a) a healthy home that is not a fault node is the unique best node
    if own is not None and sc.nodes.get(own) is H and own not in active:
        assert d.outcome == "home" and d.home == own
        assert all(scores[own] > s for n, s in scores.items() if n != own), "home is not the strict best"
    else:
        assert d.home is None and "home" not in terms

    # (b) other ranks' homes score strictly below nodes that are nobody's home and no fault
    strangers = [n for n in sc.nodes if n != own and n not in siblings and n not in active]
    sibling_nodes = [n for n in sc.nodes if n in siblings and (n in keep or len(siblings) <= limit)]
    if strangers and sibling_nodes:
        assert max(scores[n] for n in sibling_nodes) < min(scores[n] for n in strangers)

    # (c) every active fault node scores strictly below every healthy non-fault node
    fault_nodes = [n for n in sc.nodes if n in active and n in avoid]
    healthy = [n for n in sc.nodes if sc.nodes[n] is H and n not in active]
    if fault_nodes and healthy:
        assert max(scores[n] for n in fault_nodes) < min(scores[n] for n in healthy)

    # (d) an unhealthy node is never the unique top scorer when a healthy non-fault node that is
    # not another rank's home exists. (Not "any healthy non-fault node": behaviour.md "Weights" ranks "anywhere
    # else, not another rank's home" above "anywhere else" and has no term for the health of
    # nodes other than the home, so a healthy sibling's home may rank below an unhealthy stranger.)
    top = max(scores.values())
    tops = [n for n, s in scores.items() if s == top]
    if any(sc.nodes[n] is H and n not in active and n not in siblings for n in sc.nodes):
        assert not (len(tops) == 1 and sc.nodes[tops[0]] is U), f"unhealthy {tops[0]} is the unique best"

    # (e) deterministic, with or without the sibling cache, and every list bounded
    _, again, _ = _decide(sc, uid=mem.owner.uid)
    assert again.terms == d.terms and again.annotations() == d.annotations()
    _, fresh, _ = _decide(sc)  # a new uid: nothing cached
    assert fresh.terms == d.terms
    # the siblings' homes are claimed (no live pod holds them: a gang restart)
    siblings = sibling_homes(mem, sc.picked, own, limit)[0]
    index = _index_of(mem)
    claimed = BeyondHome(claimed=claimed_homes(index, mem.owner.key, siblings, own, others_claims(index, mem.owner.key, NOW), limit))
    direct = node_strategy(context(str(sc.picked), mem, snapshot(sc.nodes), SETTINGS[limit], beyond=claimed))
    assert direct.terms == d.terms
    assert all(len(t.values) <= limit for t in d.terms)
    assert all(len(set(t.values)) == len(t.values) for t in d.terms)


# -- the order classes of homing.engine.placement.weights, checked by brute force --------------------------

def _situations(w: Weights, levels: int):
    """Every kind of node a rank can see, with its class (0 best, per behaviour.md "Weights" and 4.4) and
    the sum of the weights of the terms it would match. `deepest` is the innermost of the
    rank's block domains the node is in (domains nest: in level j means in every level
    outside j too). Inside a level: image-warm and clear, image-warm, clear, the rest."""
    domains = w.domains[:levels]
    extras = (w.image_warm + w.keep_clear, w.image_warm, w.keep_clear, 0)
    fault = 1 + 4 * (levels + 1)
    out = []
    for deepest in range(levels + 1):  # 0..levels-1: in level deepest+1; levels: in none
        in_domains = sum(domains[deepest:])
        for warm in (0, w.image_warm):
            out.append((0, w.home + in_domains + w.keep_clear + warm + w.avoid_fault))  # own healthy home
        for k, extra in enumerate(extras):
            out.append((1 + 4 * deepest + k, in_domains + extra + w.avoid_fault))
            out.append((fault, in_domains + extra))  # a fault node
    return out


def _order_holds(w: Weights, levels: int) -> bool:
    """For every possible best score M in a cluster, normalised scores of a better class stay
    strictly above those of every worse class."""
    situations = _situations(w, levels)
    for best in {s for _, s in situations} - {0}:
        present = [(c, s * 100 // best) for c, s in situations if s <= best]
        worst_of = {}
        best_of = {}
        for c, n in present:
            worst_of[c] = min(worst_of.get(c, n), n)
            best_of[c] = max(best_of.get(c, n), n)
        classes = sorted(worst_of)
        for i, c in enumerate(classes):
            if any(worst_of[c] <= best_of[d] for d in classes[i + 1:]):
                return False
    return True


@st.composite
def passing_weights(draw) -> Weights:
    clear = draw(st.integers(1, 12))
    warm = draw(st.integers(clear + 1, clear + 12))
    n = draw(st.integers(0, 3))
    domains = [draw(st.integers(warm + clear + 1, warm + clear + 40)) for _ in range(n)]
    total = sum(domains)
    home = draw(st.integers(min(100, total + 1), 100))
    avoid = draw(st.integers(min(100, total + warm + clear + 1), 100))
    pool_other = draw(st.integers(1, 99))
    pool_home = draw(st.integers(pool_other + 1, 100))
    return Weights.model_construct(home=home, domains=domains, image_warm=warm, keep_clear=clear, avoid_fault=avoid,
                                   pool_home=pool_home, pool_other=pool_other)


@hsettings(max_examples=400, deadline=None)
@given(w=passing_weights())
def test_weights_that_pass_keep_the_order(w):
    if order_violations(w):
        return  # refused at start-up; nothing to check (see the next test for those)
    Weights(**w.model_dump())  # the validator agrees
    for levels in range(len(w.domains) + 1):
        assert _order_holds(w, levels), (w, levels)
        classes = node_classes(w, levels)
        for cls, total in _situations(w, levels):
            name_index = min(cls, len(classes) - 1)
            assert classes[name_index].low <= total <= classes[name_index].high, (w, levels, cls, total)
        best = classes[0].high
        assert all(a.low * 100 // best > b.high * 100 // best for a, b in zip(classes, classes[1:]))


@hsettings(max_examples=300, deadline=None)
@given(
    w=st.builds(
        Weights.model_construct,
        home=st.integers(-5, 120),
        domains=st.lists(st.integers(-5, 120), max_size=4),
        image_warm=st.integers(-5, 120),
        keep_clear=st.integers(-5, 120),
        avoid_fault=st.integers(-5, 120),
        pool_home=st.integers(-5, 120),
        pool_other=st.integers(-5, 120),
    )
)
def test_any_weights_are_refused_or_keep_the_order(w):
    """Random weight sets: the validator refuses exactly those order_violations() reports, and
    those it lets through keep the order for every number of levels."""
    problems = order_violations(w)
    try:
        Weights(**w.model_dump())
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == (not problems)
    if accepted:
        assert all(_order_holds(w, levels) for levels in range(len(w.domains) + 1))


def test_order_checker_catches_a_known_bad_set():
    """The brute-force checker is not vacuous: keep_clear 10 merges level3-sibling and elsewhere."""
    bad = Weights.model_construct(home=100, domains=[50, 25, 12], keep_clear=10, avoid_fault=100,
                                  pool_home=100, pool_other=50)
    assert not _order_holds(bad, 3)
    assert _order_holds(Weights(), 3)


def test_normalise_matches_kubernetes():
    assert normalise({"a": 0, "b": 0}) == {"a": 0, "b": 0}
    assert normalise({"a": 205, "b": 105, "c": 5}) == {"a": 100, "b": 51, "c": 2}
    assert k8s_scores([{"weight": 7, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["a"]}]}}], ["a", "b"]) == {"a": 0, "b": 100}
