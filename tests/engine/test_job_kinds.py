"""behaviour.md "Topology": which job kind a pod is, and its topology levels, read from the pod and its
PodGroup through job_facts -> job_topology. Bad input never fails: the node kind and
one warning that names the problem."""
from __future__ import annotations

import pytest

from homing.engine.placement.job_kinds.facts import job_facts
from homing.engine.placement.job_kinds.levels import Level
from homing.engine.placement.job_kinds.select import job_topology

from .helpers import npu_pod, podgroup

PREFIXES = ("huawei.com/", "nvidia.com/")
POLICY = "huawei.com/schedule_policy"
AFFINITY = "huawei.com/affinity-config"
ACCEL = "accelerator-type"


def topo(pod: dict, group: dict | None = None, home_npus: int | None = None, max_tier: int = 3):
    return job_topology(job_facts(pod, group, PREFIXES, home_npus), max_tier)


def L(name: str, size: int | None = None, by_group: bool = False) -> Level:
    return Level(name, size, by_group)


def sp(size: int | None = None) -> Level:
    return L("superPod", size)


def hn(tier: int, by_group: bool = False) -> Level:
    return L(f"tier{tier}", None, by_group)


def net(tier: int | None = None, mode: str = "hard") -> dict:
    out: dict = {"mode": mode}
    if tier is not None:
        out["highestTierAllowed"] = tier
    return out


def sub(name: str = "sg", keys=("replica",), selector=None, tier: int | None = None, size: int = 8) -> dict:
    policy: dict = {"name": name, "subGroupSize": size, "matchLabelKeys": list(keys)}
    if selector is not None:
        policy["labelSelector"] = selector
    if tier is not None:
        policy["networkTopology"] = net(tier)
    return policy


# (pod, PodGroup, home node's allocatable NPUs, cluster max tier) -> (kind, levels, group)
RECOGNISED = [
    # -- super-pod ------------------------------------------------------------------------
    pytest.param(npu_pod(annotations={"sp-block": "32"}), None, None, 0, "super-pod", (sp(4),), None,
                 id="sp-block-annotation-8-npus-default"),
    pytest.param(npu_pod(labels={"sp-block": "16"}), None, None, 0, "super-pod", (sp(2),), None,
                 id="sp-block-label"),
    pytest.param(npu_pod(annotations={"sp-block": " 64 "}), None, None, 0, "super-pod", (sp(8),), None,
                 id="sp-block-with-spaces"),
    pytest.param(npu_pod(labels={POLICY: "chip8-node8-sp"}, annotations={"sp-block": "64"}), None, None, 0,
                 "super-pod", (sp(8),), None, id="policy-label-chip8-node8-sp"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-sp", "sp-block": "64"}), None, None, 0,
                 "super-pod", (sp(8),), None, id="policy-annotation-chip8-node8-sp"),
    pytest.param(npu_pod(annotations={POLICY: "chip2-node16-sp", "sp-block": "64"}), None, None, 0,
                 "super-pod", (sp(4),), None, id="chip2-node16-sp-16-npus-per-node"),
    pytest.param(npu_pod(annotations={POLICY: "chip2-node8-sp", "sp-block": "16"}), None, None, 0,
                 "super-pod", (sp(2),), None, id="chip2-node8-sp"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}, node_selector={ACCEL: "module-a3-16-super-pod"}), None, None, 0,
                 "super-pod", (sp(2),), None, id="a3-16-node-selector"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}, node_selector={ACCEL: "module-a3-8-super-pod"}), None, None, 0,
                 "super-pod", (sp(4),), None, id="a3-8-node-selector"),
    pytest.param(npu_pod(node_selector={ACCEL: "module-a3-16-super-pod"}), None, None, 0,
                 "super-pod", (sp(),), None, id="a3-node-selector-alone-whole-job"),
    pytest.param(npu_pod(labels={POLICY: "chip2-node16-sp"}), None, None, 0,
                 "super-pod", (sp(),), None, id="policy-without-sp-block-whole-job"),
    pytest.param(npu_pod(annotations={"sp-block": "64"}), None, 16, 0, "super-pod", (sp(4),), None,
                 id="home-allocatable-16-when-no-convention"),
    pytest.param(npu_pod(annotations={"sp-block": "64"}), None, 4, 0, "super-pod", (sp(16),), None,
                 id="home-allocatable-4-when-no-convention"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-sp", "sp-block": "64"}), None, 16, 0, "super-pod",
                 (sp(8),), None, id="policy-convention-beats-home-allocatable"),
    pytest.param(npu_pod(annotations={"sp-block": "64"}, node_selector={ACCEL: "module-a3-16-super-pod"}), None, 8, 0,
                 "super-pod", (sp(4),), None, id="accelerator-convention-beats-home-allocatable"),
    pytest.param(npu_pod(annotations={"sp-block": "64"}), podgroup(minMember=16), None, 0, "super-pod", (sp(8),), None,
                 id="sp-block-divides-job"),
    pytest.param(npu_pod(), podgroup(annotations={"sp-block": "32"}), None, 0, "super-pod", (sp(4),), None,
                 id="sp-block-from-podgroup"),
    pytest.param(npu_pod(), podgroup(labels={POLICY: "chip2-node16-sp"}, annotations={"sp-block": "32"}), None, 0,
                 "super-pod", (sp(2),), None, id="policy-and-sp-block-from-podgroup"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}), podgroup(annotations={"sp-block": "32"}), None, 0,
                 "super-pod", (sp(4),), None, id="pod-and-podgroup-agree"),
    # -- rack-windowed super-pod -----------------------------------------------------------
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "64", "sp-block": "256"}), None, None, 0,
                 "rack-super-pod", (L("rack", 8), sp(32)), None, id="ra-block-and-sp-block"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "tp-block": "32", "sp-block": "256"}), None, None, 0,
                 "rack-super-pod", (L("rack", 4), sp(32)), None, id="tp-block-old-name"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "4", "sp-block": "64"}), None, None, 0,
                 "rack-super-pod", (L("rack", 1), sp(8)), None, id="ra-block-4-rounds-up-to-one-node"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "16", "sp-block": "16"}), None, None, 0,
                 "rack-super-pod", (L("rack", 2), sp(2)), None, id="ra-block-equal-sp-block"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "1"}), None, None, 0,
                 "rack-super-pod", (L("rack", 1), sp()), None, id="ra-block-1-no-sp-block-whole-job-super-pod"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "64", "sp-block": "128"}), None, 16, 0,
                 "rack-super-pod", (L("rack", 8), sp(16)), None, id="ra-policy-means-8-npus-whatever-home-says"),
    pytest.param(npu_pod(), podgroup(labels={POLICY: "chip8-node8-ra64-sp"}, annotations={"ra-block": "32", "sp-block": "64"}),
                 None, 0, "rack-super-pod", (L("rack", 4), sp(8)), None, id="rack-values-from-podgroup"),
    # -- multilevel -----------------------------------------------------------------------------
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8,level2=32"}), None, None, 0,
                 "multilevel", (L("level1", 8), L("level2", 32)), None, id="two-levels"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: " level1 = 4 , level2=8,level3= 16 "}), None, None, 0,
                 "multilevel", (L("level1", 4), L("level2", 8), L("level3", 16)), None, id="spaces-three-levels"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=2"}), None, None, 0,
                 "multilevel", (L("level1", 2),), None, id="one-level"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=4,level2=4"}), None, None, 0,
                 "multilevel", (L("level1", 4), L("level2", 4)), None, id="outer-equal-inner"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=2,level2=4,level3=8,level4=16"}), None, None, 0,
                 "multilevel", (L("level1", 2), L("level2", 4), L("level3", 8), L("level4", 16)), None,
                 id="four-levels-all-kept-here"),
    pytest.param(npu_pod(), podgroup(labels={POLICY: "multilevel"}, annotations={AFFINITY: "level1=8,level2=16"}), None, 0,
                 "multilevel", (L("level1", 8), L("level2", 16)), None, id="multilevel-from-podgroup"),
    pytest.param(npu_pod(labels={POLICY: "multilevel"}), podgroup(annotations={AFFINITY: "level1=8"}), None, 0,
                 "multilevel", (L("level1", 8),), None, id="affinity-config-from-podgroup-only"),
    # -- hypernode ----------------------------------------------------------------------------
    pytest.param(npu_pod(), podgroup(networkTopology=net(2)), None, 3, "hypernode", (hn(1), hn(2)), None,
                 id="highest-tier-caps-levels"),
    pytest.param(npu_pod(), podgroup(networkTopology=net()), None, 3, "hypernode", (hn(1), hn(2), hn(3)), None,
                 id="no-highest-tier-all-cluster-tiers"),
    pytest.param(npu_pod(), podgroup(networkTopology=net(5, "soft")), None, 2, "hypernode", (hn(1), hn(2)), None,
                 id="highest-tier-above-cluster-capped-by-cluster"),
    pytest.param(npu_pod(), podgroup(networkTopology=net(1)), None, 1, "hypernode", (hn(1),), None,
                 id="single-tier-cluster"),
    pytest.param(npu_pod(labels={"role": "worker", "replica": "3"}),
                 podgroup(networkTopology=net(2), subGroupPolicy=[sub(selector={"matchLabels": {"role": "worker"}}, tier=1)]),
                 None, 3, "hypernode", (hn(1, True), hn(2)), "sg:replica=3", id="subgroup-tier1-job-tier2"),
    pytest.param(npu_pod(labels={"replica": "0", "part": "b"}),
                 podgroup(networkTopology=net(3), subGroupPolicy=[sub(keys=("replica", "part"), tier=2)]),
                 None, 3, "hypernode", (hn(1, True), hn(2, True), hn(3)), "sg:replica=0,part=b",
                 id="subgroup-two-keys-no-selector-selects-all"),
    pytest.param(npu_pod(labels={"role": "ps", "replica": "3"}),
                 podgroup(networkTopology=net(2), subGroupPolicy=[sub(selector={"matchLabels": {"role": "worker"}}, tier=1)]),
                 None, 3, "hypernode", (hn(1), hn(2)), None, id="subgroup-selector-not-matching-whole-job"),
    pytest.param(npu_pod(labels={"role": "ps", "replica": "3"}),
                 podgroup(networkTopology=net(2), subGroupPolicy=[
                     sub("workers", selector={"matchLabels": {"role": "worker"}}, tier=1),
                     sub("servers", selector={"matchExpressions": [{"key": "role", "operator": "In", "values": ["ps"]}]},
                         tier=1),
                 ]),
                 None, 3, "hypernode", (hn(1, True), hn(2)), "servers:replica=3", id="second-policy-by-match-expression"),
    pytest.param(npu_pod(labels={"replica": "7"}), podgroup(subGroupPolicy=[sub(tier=2)]), None, 2,
                 "hypernode", (hn(1, True), hn(2, True)), "sg:replica=7", id="subgroup-policy-alone-recognised"),
    # -- precedence: hypernode > multilevel > rack > super-pod > node ---------------------------
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8", "sp-block": "32"}),
                 podgroup(networkTopology=net(1)), None, 2, "hypernode", (hn(1),), None, id="hypernode-beats-multilevel"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "64", "sp-block": "128"}),
                 podgroup(networkTopology=net(1)), None, 2, "hypernode", (hn(1),), None, id="hypernode-beats-rack"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}, node_selector={ACCEL: "module-a3-8-super-pod"}),
                 podgroup(networkTopology=net(2)), None, 2, "hypernode", (hn(1), hn(2)), None,
                 id="hypernode-beats-super-pod"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8", "sp-block": "32"},
                         node_selector={ACCEL: "module-a3-16-super-pod"}), None, None, 0,
                 "multilevel", (L("level1", 8),), None, id="multilevel-beats-super-pod"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "8", "sp-block": "64"},
                         node_selector={ACCEL: "module-a3-16-super-pod"}), None, None, 0,
                 "rack-super-pod", (L("rack", 1), sp(8)), None, id="rack-beats-super-pod"),
    # -- node -------------------------------------------------------------------------------------
    pytest.param(npu_pod(), None, None, 3, "node", (), None, id="plain-npu-pod"),
    pytest.param(npu_pod(resource="huawei.com/npu-core", npus=4), None, None, 3, "node", (), None, id="vnpu-core"),
    pytest.param(npu_pod(resource="huawei.com/Ascend910-4c", npus=1), None, None, 3, "node", (), None,
                 id="vnpu-template"),
    pytest.param(npu_pod(annotations={POLICY: "chip4-node4"}), podgroup(minMember=4), None, 3, "node", (), None,
                 id="unrelated-policy"),
    pytest.param(npu_pod(node_selector={ACCEL: "module-910b-8"}), None, None, 3, "node", (), None,
                 id="unrelated-accelerator-type"),
    pytest.param(npu_pod(), podgroup(minMember=4, networkTopology=None, subGroupPolicy=[]), None, 3, "node", (), None,
                 id="empty-topology-fields-not-hypernode"),
]


@pytest.mark.parametrize("pod, group, home_npus, max_tier, kind, levels, sub_group", RECOGNISED)
def test_recognised(pod, group, home_npus, max_tier, kind, levels, sub_group):
    got = topo(pod, group, home_npus, max_tier)
    assert (got.kind, got.levels, got.group) == (kind, levels, sub_group)
    assert got.warnings == ()


BAD = [
    pytest.param(npu_pod(annotations={"sp-block": "12"}), None, None, 0, "not a multiple of the node's 8 NPUs",
                 id="sp-block-not-multiple-of-8"),
    pytest.param(npu_pod(annotations={POLICY: "chip2-node16-sp", "sp-block": "24"}), None, None, 0,
                 "not a multiple of the node's 16 NPUs", id="sp-block-not-multiple-of-16"),
    pytest.param(npu_pod(annotations={"sp-block": "24"}), None, 16, 0, "not a multiple of the node's 16 NPUs",
                 id="sp-block-not-multiple-of-home-allocatable"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}), podgroup(minMember=3), None, 0,
                 "does not divide the job's 24 NPUs", id="sp-block-not-dividing-job"),
    pytest.param(npu_pod(annotations={"sp-block": "64"}, npus=16), podgroup(minMember=6), None, 0,
                 "does not divide the job's 96 NPUs", id="sp-block-not-dividing-job-16-per-pod"),
    pytest.param(npu_pod(annotations={"sp-block": "abc"}), None, None, 0, "not a positive integer", id="sp-block-text"),
    pytest.param(npu_pod(annotations={"sp-block": "0"}), None, None, 0, "not a positive integer", id="sp-block-zero"),
    pytest.param(npu_pod(annotations={"sp-block": "-8"}), None, None, 0, "not a positive integer", id="sp-block-negative"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "24", "sp-block": "96"}), None, None, 0,
                 "not a power of two", id="ra-block-not-power-of-two"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "tp-block": "12"}), None, None, 0,
                 "not a power of two", id="tp-block-not-power-of-two"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "128", "sp-block": "64"}), None, None, 0,
                 "larger than sp-block", id="ra-block-larger-than-sp-block"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "sp-block": "64"}), None, None, 0,
                 "needs ra-block", id="missing-ra-block"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "0"}), None, None, 0,
                 "not a positive integer", id="ra-block-zero"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "64", "sp-block": "100"}), None, None, 0,
                 "not a multiple", id="rack-job-sp-block-not-multiple"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level2=8"}), None, None, 0,
                 "expected level1", id="affinity-wrong-first-level"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "lvl1=8"}), None, None, 0,
                 "expected level1", id="affinity-wrong-level-name"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8,level3=16"}), None, None, 0,
                 "expected level2", id="affinity-level-skipped"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=0"}), None, None, 0,
                 "not a positive integer", id="affinity-zero"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=eight"}), None, None, 0,
                 "not a positive integer", id="affinity-non-numeric"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1"}), None, None, 0,
                 "expected level1", id="affinity-no-size"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8,level2=12"}), None, None, 0,
                 "level2=12 is not a multiple of level1=8", id="affinity-outer-not-multiple"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: " , "}), None, None, 0,
                 "names no level", id="affinity-empty"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel"}), None, None, 0, "needs huawei.com/affinity-config",
                 id="affinity-missing"),
    pytest.param(npu_pod(), podgroup(networkTopology=net(1)), None, 0, "no HyperNodes", id="hypernode-job-no-hypernodes"),
    pytest.param(npu_pod(labels={"role": "worker"}),
                 podgroup(subGroupPolicy=[sub(keys=("role", "replica"), tier=1)]), None, 2,
                 "no label 'replica'", id="pod-missing-match-label-key"),
    pytest.param(npu_pod(), podgroup(networkTopology=net(0)), None, 2, "highestTierAllowed=0",
                 id="highest-tier-zero"),
    pytest.param(npu_pod(), podgroup(networkTopology=net("2")), None, 2, "highestTierAllowed='2'",
                 id="highest-tier-string"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-sp"}), podgroup(labels={POLICY: "chip2-node16-sp"}), None, 0,
                 "huawei.com/schedule_policy", id="contradictory-schedule-policy"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8"}),
                 podgroup(labels={POLICY: "chip8-node8-ra64-sp"}), None, 0,
                 "huawei.com/schedule_policy", id="contradictory-policy-between-kinds"),
    pytest.param(npu_pod(annotations={"sp-block": "32"}), podgroup(annotations={"sp-block": "64"}), None, 0,
                 "sp-block", id="contradictory-sp-block"),
    pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "32"}),
                 podgroup(annotations={"ra-block": "64"}), None, 0, "ra-block", id="contradictory-ra-block"),
    pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: "level1=8"}),
                 podgroup(annotations={AFFINITY: "level1=4"}), None, 0, "affinity-config", id="contradictory-affinity"),
]


@pytest.mark.parametrize("pod, group, home_npus, max_tier, needle", BAD)
def test_bad_input_falls_back_to_node_with_one_warning(pod, group, home_npus, max_tier, needle):
    got = topo(pod, group, home_npus, max_tier)
    assert (got.kind, got.levels, got.group) == ("node", (), None)
    assert len(got.warnings) == 1, got.warnings
    assert needle in got.warnings[0]
    assert got.warnings[0].endswith("using the node strategy")


@pytest.mark.parametrize(
    "pod, group, kind_word",
    [
        pytest.param(npu_pod(annotations={"sp-block": "12"}), None, "super-pod", id="super-pod"),
        pytest.param(npu_pod(annotations={POLICY: "chip8-node8-ra64-sp"}), None, "rack-super-pod", id="rack"),
        pytest.param(npu_pod(annotations={POLICY: "multilevel"}), None, "multilevel", id="multilevel"),
        pytest.param(npu_pod(), podgroup(networkTopology=net(1)), "hypernode", id="hypernode"),
    ],
)
def test_warning_names_the_kind(pod, group, kind_word):
    got = topo(pod, group, max_tier=0)
    assert got.warnings[0].startswith(f"{kind_word} job:")


def test_npus_per_pod_sums_accelerator_requests_only():
    pod = npu_pod(annotations={"sp-block": "32"}, npus=4)
    pod["spec"]["containers"].append({"name": "side", "resources": {"requests": {"huawei.com/Ascend910": "4", "cpu": "8"}}})
    facts = job_facts(pod, podgroup(minMember=4), PREFIXES, None)
    assert facts.npus_per_pod == 8
    assert topo(pod, podgroup(minMember=4)).kind == "super-pod"  # 4 x 8 = 32: one whole block
    assert topo(pod, podgroup(minMember=3)).kind == "node"  # 24 NPUs: not whole blocks


def test_pod_value_wins_when_podgroup_lacks_it_and_podgroup_fills_in():
    pod = npu_pod(annotations={POLICY: "chip8-node8-ra64-sp", "ra-block": "16"})
    group = podgroup(annotations={"sp-block": "64"})
    assert topo(pod, group).levels == (L("rack", 2), sp(8))


# -- numbers too large for int(): a warning and the node kind, never a bare ValueError -------------
HUGE = "9" * 4301  # one digit past Python's int-string limit
RA = "chip8-node8-ra64-sp"


@pytest.mark.parametrize(
    "pod, group, needle",
    [
        pytest.param(npu_pod(annotations={"sp-block": HUGE}), None, "sp-block", id="sp-block-4301-digits"),
        pytest.param(npu_pod(annotations={"sp-block": "8" + "0" * 9}), None, "sp-block", id="sp-block-ten-digits"),
        pytest.param(npu_pod(annotations={"sp-block": "\u00b2"}), None, "sp-block", id="sp-block-superscript"),
        pytest.param(npu_pod(annotations={POLICY: RA, "ra-block": HUGE}), None, "ra-block", id="ra-block-4301-digits"),
        pytest.param(npu_pod(annotations={POLICY: RA, "tp-block": HUGE}), None, "ra-block", id="tp-block-4301-digits"),
        pytest.param(npu_pod(annotations={POLICY: RA, "ra-block": "8", "sp-block": HUGE}), None, "sp-block",
                     id="rack-job-sp-block-4301-digits"),
        pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: f"level1={HUGE}"}), None, "level1",
                     id="affinity-config-4301-digits"),
        pytest.param(npu_pod(annotations={POLICY: "multilevel", AFFINITY: f"level1=8,level2={HUGE}"}), None, "level2",
                     id="affinity-config-outer-4301-digits"),
        pytest.param(npu_pod(annotations={"sp-block": "32"}, npus=HUGE), podgroup(minMember=4), None,
                     id="npu-request-4301-digits"),
        pytest.param(npu_pod(annotations={"sp-block": "32"}, npus="\u00b2"), podgroup(minMember=4), None,
                     id="npu-request-superscript"),
    ],
)
def test_huge_or_odd_numbers_fall_back_with_a_clear_warning(pod, group, needle):
    got = topo(pod, group)
    assert (got.kind, got.levels) == ("node", ())
    assert len(got.warnings) == 1, got.warnings
    assert needle is None or needle in got.warnings[0]
    assert len(got.warnings[0]) < 400, "the warning names the value, it does not copy 4,301 digits"


@pytest.mark.parametrize(
    "amount, npus",
    [
        pytest.param("8", 8, id="plain"),
        pytest.param(HUGE, 0, id="4301-digits-not-counted"),
        pytest.param("\u00b2", 0, id="superscript-not-counted"),
        pytest.param("1k", 0, id="suffixed-quantity-not-counted"),
    ],
)
def test_job_facts_reads_npu_requests_without_raising(amount, npus):
    facts = job_facts(npu_pod(npus=amount), None, PREFIXES, None)
    assert facts.npus_per_pod == npus
    assert topo(npu_pod(npus=amount)).kind == "node"  # a node job never needs the count


def test_contradiction_warning_stays_short():
    got = topo(npu_pod(annotations={"sp-block": "3" * 100_000}), podgroup(annotations={"sp-block": "4" * 100_000}))
    assert got.kind == "node" and "sp-block" in got.warnings[0] and len(got.warnings[0]) < 400


from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

_numberish = st.one_of(st.text(), st.text(alphabet="0123456789 ", max_size=20), st.integers(4290, 4400).map(lambda n: "9" * n))
_topology_keys = st.fixed_dictionaries({}, optional={
    "sp-block": _numberish, "ra-block": _numberish, "tp-block": _numberish,
    AFFINITY: st.one_of(st.text(), st.tuples(_numberish, _numberish).map(lambda t: f"level1={t[0]},level2={t[1]}")),
    POLICY: st.sampled_from(["multilevel", RA, "chip8-node8-sp", "chip2-node16-sp", "other"]),
})


@hsettings(max_examples=300, deadline=None)
@given(mine=_topology_keys, theirs=_topology_keys, npus=_numberish, min_member=st.integers(0, 10**6))
def test_job_topology_never_raises(mine, theirs, npus, min_member):
    got = topo(npu_pod(annotations=mine, npus=npus), podgroup(annotations=theirs, minMember=min_member))
    assert got.kind == "node" or not got.warnings
    assert all(len(w) < 400 for w in got.warnings)
