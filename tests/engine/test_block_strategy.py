"""behaviour.md "Topology"-4.3 end to end through admission.decide: the block step of the topology kinds
(super-pod, rack, multilevel, HyperNode) between the home term and keep-clear/avoid."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import jsonpatch
import pytest

from homing.config import Settings
from homing.engine.identity import WorkloadIndex
from homing.engine.memory import MemoryIndex
from homing.engine.memory.index import LivePod
from homing.engine.model import ClusterSnapshot, DomainExpr, Health, NodeState, Operator
from homing.engine.placement.decide import decide

from .helpers import HOSTNAME, NOW, PREFERRED, npu_pod, owner, podgroup

H, U = Health.HEALTHY, Health.UNHEALTHY
SETTINGS = Settings()
RACK_KEY, SP_KEY = "homing.io/rack-id", "homing.io/superpod-id"
POLICY = "huawei.com/schedule_policy"
GROUP_NAME = "scheduling.k8s.io/group-name"

# Two super-pods of two racks of two nodes: S1 = r1 {a1, a2} + r2 {a3, a4}, S2 = r3 {b1, b2} + r4 {b3, b4}.
LAYOUT = {
    "a1": ("r1", "S1"), "a2": ("r1", "S1"), "a3": ("r2", "S1"), "a4": ("r2", "S1"),
    "b1": ("r3", "S2"), "b2": ("r3", "S2"), "b3": ("r4", "S2"), "b4": ("r4", "S2"),
}


def labelled_cluster(unhealthy=(), gone=(), keyless=False) -> ClusterSnapshot:
    """The LAYOUT as NodeStates whose domains came from labels (keyless: from a source
    that has no label, so terms must list hostnames)."""
    nodes = {}
    for name, (rack, sp) in LAYOUT.items():
        if name in gone:
            continue
        keys = () if keyless else (("rack", RACK_KEY), ("superPod", SP_KEY))
        nodes[name] = NodeState(name, U if name in unhealthy else H, (("rack", rack), ("superPod", sp)), keys, 8)
    return ClusterSnapshot(nodes)


def setup(ranks: dict, snap: ClusterSnapshot, faults: dict | None = None, kind: str = "StatefulSet"):
    """An index remembering `ranks` (rank -> node) with each node's path in `snap`, each
    rank's pod running there (no home is vacant: none is claimed)."""
    index, workloads = MemoryIndex(), WorkloadIndex()
    ref = owner(kind=kind, name="job")
    for key, node in ranks.items():
        index.record_bind(ref, key, node, snap.topology(node), NOW - 100)
        index.pod_seen(f"pod-{key}", LivePod(ref.key, key, node, running=True))
    for key, nodes in (faults or {}).items():
        for node in nodes:
            index.record_fault(ref.key, key, node, NOW - 10, SETTINGS.lifetimes.fault_memory_seconds)
    return index, workloads, ref


def summary(decision) -> list[tuple]:
    return [(t.role, t.weight, t.key, t.operator.value, t.values) for t in decision.terms]


def with_claimed(terms: list[tuple]) -> list[tuple]:
    """The claimed term (two terms: 100 + 60) lists the avoided nodes too, after avoid."""
    out = list(terms)
    for t in terms:
        if t[0] == "avoid":
            out += [("claimed", 100, HOSTNAME, "NotIn", t[4]), ("claimed", 60, HOSTNAME, "NotIn", t[4])]
    return out


def record(decision) -> dict:
    return json.loads(decision.annotations()["homing.io/decision"])


SP_BLOCK_32 = {"sp-block": "32"}  # 4 nodes: one super-pod
RACK_SP = {POLICY: "chip8-node8-ra64-sp", "ra-block": "16", "sp-block": "32"}  # racks of 2 nodes, super-pods of 4
FIRST_BLOCK = {"0": "a1", "1": "a2", "2": "a3", "3": "a4"}
BOTH_BLOCKS = {**FIRST_BLOCK, "4": "b1", "5": "b2", "6": "b3", "7": "b4"}


def home(node):
    return ("home", 100, HOSTNAME, "In", (node,))


def dom(level, weight, key, *values):
    return (f"domain:{level}", weight, key, "In", tuple(values))


def clear(*nodes):
    return ("keep-clear", SETTINGS.weights.keep_clear, HOSTNAME, "NotIn", tuple(nodes))


def avoid(*nodes):
    return ("avoid", 100, HOSTNAME, "NotIn", tuple(nodes))


@dataclass
class Case:
    annotations: dict
    ranks: dict
    rank: int
    terms: list
    domains: list
    kind: str
    outcome: str = "home"
    reason: str = "home"
    avoided: list = field(default_factory=list)
    unhealthy: tuple = ()
    gone: tuple = ()
    keyless: bool = False
    faults: dict | None = None


CASES = [
    pytest.param(Case(SP_BLOCK_32, FIRST_BLOCK, 2,
                      [home("a3"), dom("superPod", 32, SP_KEY, "S1"), clear("a1", "a2", "a4")],
                      ["superPod=S1"], "super-pod"), id="super-pod-home-and-domain"),
    pytest.param(Case(SP_BLOCK_32, {"0": "a1", "1": "a2", "2": "b1"}, 3,
                      [dom("superPod", 32, SP_KEY, "S1"), clear("a1", "a2", "b1")],
                      ["superPod=S1"], "super-pod", outcome="domain", reason="no-memory"),
                 id="super-pod-new-rank-goes-to-block-majority"),
    pytest.param(Case(SP_BLOCK_32, {"0": "a1", "1": "a2", "2": "a3", "5": "b2"}, 4,
                      [dom("superPod", 32, SP_KEY, "S2"), clear("a1", "a2", "a3", "b2")],
                      ["superPod=S2"], "super-pod", outcome="domain", reason="no-memory"),
                 id="super-pod-second-block-own-domain"),
    pytest.param(Case({}, FIRST_BLOCK, 2, [home("a3"), clear("a1", "a2", "a4")], [], "node"),
                 id="node-kind-no-domain-terms"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [home("a3"), dom("rack", 32, RACK_KEY, "r2"), dom("superPod", 26, SP_KEY, "S1"),
                       clear("a1", "a2", "a4")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod"), id="rack-then-super-pod"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [home("a3"), dom("rack", 32, HOSTNAME, "a3", "a4"), dom("superPod", 26, HOSTNAME, "a1", "a2", "a3", "a4"),
                       clear("a1", "a2", "a4")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod", keyless=True), id="no-label-key-hostnames"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [home("a3"), dom("rack", 32, RACK_KEY, "r2"), dom("superPod", 26, SP_KEY, "S1"),
                       clear("a1", "a2", "a4"), avoid("a1", "a4")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod", avoided=["a1", "a4"], unhealthy=("a1", "a4", "b1")),
                 id="unhealthy-nodes-in-domains-avoided-others-not"),
    pytest.param(Case(RACK_SP, {**FIRST_BLOCK, "2": "b3"}, 2,
                      [home("b3"), dom("rack", 32, RACK_KEY, "r4"), dom("superPod", 26, SP_KEY, "S1"),
                       clear("a1", "a2", "a4")],
                      ["rack=r4", "superPod=S1"], "rack-super-pod"),
                 id="rack-tie-to-own-rank-super-pod-majority"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [dom("rack", 32, RACK_KEY, "r2"), dom("superPod", 26, SP_KEY, "S1"), clear("a1", "a2", "a4"),
                       avoid("a3")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod", outcome="domain", reason="home-unhealthy",
                      avoided=["a3"], unhealthy=("a3",)),
                 id="unhealthy-home-domain-terms-kept"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [dom("rack", 32, RACK_KEY, "r2"), dom("superPod", 26, SP_KEY, "S1"), clear("a1", "a2", "a4"),
                       avoid("a3")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod", outcome="domain", reason="home-faulted",
                      avoided=["a3"], faults={"2": ["a3"]}),
                 id="faulted-rank-keeps-domains-avoids-fault"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [home("a3"), dom("rack", 32, RACK_KEY, "r2"), dom("superPod", 26, SP_KEY, "S1"),
                       clear("a1", "a2", "a4"), avoid("b4")],
                      ["rack=r2", "superPod=S1"], "rack-super-pod", avoided=["b4"], faults={"2": ["b4"]}),
                 id="fault-elsewhere-home-kept"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2,
                      [dom("superPod", 26, SP_KEY, "S1"), clear("a1", "a2", "a4")],
                      ["superPod=S1"], "rack-super-pod", outcome="domain", reason="home-gone", gone=("a3", "a4")),
                 id="rack-gone-no-rack-term-super-pod-keeps-weight-26"),
    pytest.param(Case(RACK_SP, FIRST_BLOCK, 2, [clear("a1", "a2", "a4")], [], "rack-super-pod", outcome="none",
                      reason="home-gone", gone=("a1", "a2", "a3", "a4")),
                 id="all-domains-gone-no-domain-terms"),
    pytest.param(Case(RACK_SP, {}, 2, [], [], "rack-super-pod", outcome="none", reason="no-memory"),
                 id="no-memory-no-terms"),
]


@pytest.mark.parametrize("case", CASES)
def test_block_terms(case: Case):
    snap = labelled_cluster(case.unhealthy, case.gone, case.keyless)
    # memory was recorded while every node was there
    index, workloads, ref = setup(case.ranks, labelled_cluster(keyless=case.keyless), case.faults)
    p = npu_pod(name=f"job-{case.rank}", controller=ref, annotations=case.annotations)
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    assert d.warnings == []
    assert summary(d) == with_claimed(case.terms)
    assert (d.kind, d.domains, d.outcome, d.reason, d.avoided) == (
        case.kind, case.domains, case.outcome, case.reason, case.avoided)
    rec = record(d)
    assert rec.get("domains") == (case.domains or None)
    assert rec.get("kind") == (None if case.kind == "node" else case.kind)


def test_patch_appends_terms_in_order_and_records_domains():
    snap = labelled_cluster(unhealthy=("a2",))
    index, workloads, ref = setup(FIRST_BLOCK, snap)
    p = npu_pod(name="job-0", controller=ref, annotations=RACK_SP)
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    patched = jsonpatch.apply_patch(p, d.patch(p))
    preferred = patched["spec"]["affinity"]["nodeAffinity"][PREFERRED]
    assert [(t["weight"], t["preference"]["matchExpressions"][0]["key"]) for t in preferred] == [
        (100, HOSTNAME), (32, RACK_KEY), (26, SP_KEY), (SETTINGS.weights.keep_clear, HOSTNAME), (100, HOSTNAME),
        (100, HOSTNAME), (60, HOSTNAME)]
    assert preferred[1]["preference"]["matchExpressions"][0]["values"] == ["r1"]
    assert preferred[4]["preference"]["matchExpressions"][0] == {"key": HOSTNAME, "operator": "NotIn", "values": ["a2"]}
    annotations = patched["metadata"]["annotations"]
    assert annotations["homing.io/home"] == "a1"
    assert json.loads(annotations["homing.io/decision"]) == {
        "owner": "StatefulSet/ns/job", "rank": "0", "home": "a1", "reason": "home", "kind": "rack-super-pod",
        "domains": ["rack=r1", "superPod=S1"], "avoid": ["a2"]}


# -- multilevel: four levels, only three get terms ----------------------------------------------

LEVEL_KEYS = tuple((f"level{i}", f"topo.example.com/l{i}") for i in range(1, 5))


def multilevel_cluster() -> ClusterSnapshot:
    """16 nodes m0..m15: level1 groups of 2, level2 of 4, level3 of 8, level4 of 16."""
    nodes = {}
    for i in range(16):
        path = tuple((f"level{k}", f"g{k}-{i // 2 ** k}") for k in range(1, 5))
        nodes[f"m{i}"] = NodeState(f"m{i}", H, path, LEVEL_KEYS, 8)
    return ClusterSnapshot(nodes)


def test_multilevel_at_most_three_domain_levels():
    snap = multilevel_cluster()
    index, workloads, ref = setup({str(i): f"m{i}" for i in range(16) if i != 5}, snap)
    p = npu_pod(name="job-5", controller=ref,
                annotations={POLICY: "multilevel", "huawei.com/affinity-config": "level1=2,level2=4,level3=8,level4=16"})
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    assert d.kind == "multilevel" and d.outcome == "domain"
    assert [t for t in summary(d) if t[0].startswith("domain")] == [
        dom("level1", 32, "topo.example.com/l1", "g1-2"),
        dom("level2", 26, "topo.example.com/l2", "g2-1"),
        dom("level3", 20, "topo.example.com/l3", "g3-0"),
    ]
    assert d.domains == ["level1=g1-2", "level2=g2-1", "level3=g3-0"]
    assert [t.role for t in d.terms] == ["domain:level1", "domain:level2", "domain:level3", "keep-clear"]


# -- HyperNodes: selector when the HyperNode has one, else hostnames ------------------------------

def hyper_cluster(selectors: bool) -> ClusterSnapshot:
    """h0..h7: tier1 leaf-0 {h0..h3}, leaf-1 {h4..h7}; tier2 spine {all}."""
    nodes = {
        f"h{i}": NodeState(f"h{i}", H, (("tier1", f"leaf-{i // 4}"), ("tier2", "spine")), (), 8) for i in range(8)
    }
    snap = ClusterSnapshot(nodes)
    snap.max_tier = 2
    if selectors:
        snap.selectors = {
            ("tier1", "leaf-0"): DomainExpr("net.example.com/leaf", ("0",)),
            ("tier1", "leaf-1"): DomainExpr("net.example.com/leaf", ("1",)),
            ("tier2", "spine"): DomainExpr("net.example.com/leaf", ("0", "1")),
        }
    return snap


@pytest.mark.parametrize(
    "selectors, tier1, tier2",
    [
        pytest.param(True, dom("tier1", 32, "net.example.com/leaf", "1"), dom("tier2", 26, "net.example.com/leaf", "0", "1"),
                     id="selectors"),
        pytest.param(False, dom("tier1", 32, HOSTNAME, "h4", "h5", "h6", "h7"),
                     dom("tier2", 26, HOSTNAME, *(f"h{i}" for i in range(8))), id="hostnames"),
    ],
)
def test_hypernode_domains_by_subgroup(selectors, tier1, tier2):
    snap = hyper_cluster(selectors)
    index, workloads = MemoryIndex(), WorkloadIndex()
    ref = owner(kind="Job", name="job", api_version="batch.volcano.sh/v1alpha1")
    # sub-group r=0 on leaf-0, sub-group r=1 on leaf-1
    for i in range(8):
        node = f"h{i}"
        index.record_bind(ref, str(i), node, snap.topology(node), NOW - 100, group=f"sg:r={i // 4}")
    index.record_bind(ref, "8", "h0", snap.topology("h0"), NOW - 100, group="sg:r=1")  # a stray member
    group = podgroup(networkTopology={"mode": "hard", "highestTierAllowed": 2},
                     subGroupPolicy=[{"name": "sg", "subGroupSize": 4, "matchLabelKeys": ["r"],
                                      "networkTopology": {"mode": "hard", "highestTierAllowed": 1}}])
    p = npu_pod(name="job-worker-9", controller=ref, labels={"r": "1"},
                annotations={GROUP_NAME: "pg", "hccl/rankIndex": "9"})
    d = decide(p, index, workloads, snap, SETTINGS, NOW, {("ns", "pg"): group})
    assert (d.kind, d.outcome, d.reason) == ("hypernode", "domain", "no-memory")
    assert summary(d)[:2] == [tier1, tier2]
    assert d.domains == ["tier1=leaf-1", "tier2=spine"]


def test_podgroup_not_found_is_node_kind():
    snap = hyper_cluster(True)
    index, workloads, ref = setup({"0": "h0"}, snap)
    p = npu_pod(name="job-0", controller=ref, annotations={GROUP_NAME: "other"})
    d = decide(p, index, workloads, snap, SETTINGS, NOW, {("ns", "pg"): podgroup(networkTopology={"mode": "hard"})})
    assert (d.kind, [t.role for t in d.terms]) == ("node", ["home"])


def test_bad_topology_warns_and_keeps_node_terms():
    snap = labelled_cluster()
    index, workloads, ref = setup(FIRST_BLOCK, snap)
    p = npu_pod(name="job-1", controller=ref, annotations={"sp-block": "12"})
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    assert (d.kind, d.domains, [t.role for t in d.terms]) == ("node", [], ["home", "keep-clear"])
    assert len(d.warnings) == 1 and "sp-block=12" in d.warnings[0]
    assert "kind" not in record(d)


def test_home_allocatable_sets_nodes_per_block():
    """sp-block 32 on 16-NPU nodes (no convention on the pod) is a block of 2 nodes."""
    nodes = {}
    for name, (_rack, sp) in LAYOUT.items():
        nodes[name] = NodeState(name, H, (("superPod", sp),), (("superPod", SP_KEY),), 16)
    snap = ClusterSnapshot(nodes)
    # ranks 0, 1 in S1; ranks 2, 3 in S2: with blocks of 2 nodes, rank 3's block is {2, 3}
    index, workloads, ref = setup({"0": "a1", "1": "a2", "2": "b1", "3": "b2"}, snap)
    p = npu_pod(name="job-3", controller=ref, annotations=SP_BLOCK_32, npus=16)
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    assert d.domains == ["superPod=S2"]
    # on 8-NPU nodes (the default) the block is 4 nodes: a 2-2 tie that goes to rank 0's S1
    snap8 = ClusterSnapshot({n: NodeState(n, H, s.topology, s.keys, 8) for n, s in snap.nodes.items()})
    assert decide(p, index, workloads, snap8, SETTINGS, NOW).domains == ["superPod=S1"]


def test_task_specs_are_separate_blocks():
    snap = labelled_cluster()
    index, workloads = MemoryIndex(), WorkloadIndex()
    ref = owner(kind="Job", name="job", api_version="batch.volcano.sh/v1alpha1")
    for key, node in {"ps/0": "b1", "ps/1": "b2", "ps/2": "b3", "worker/0": "a1", "worker/1": "a2"}.items():
        index.record_bind(ref, key, node, snap.topology(node), NOW - 100)
    p = npu_pod(name="job-worker-2", controller=ref, annotations={
        **SP_BLOCK_32, "volcano.sh/task-spec": "worker", "volcano.sh/task-index": "2"})
    d = decide(p, index, workloads, snap, SETTINGS, NOW)
    assert (d.rank, d.domains) == ("worker/2", ["superPod=S1"])
    assert d.terms[0].values == ("S1",) and d.terms[0].operator is Operator.IN
