"""behaviour.md "Topology": the home domain of a rank's block at each level: the majority of the block's
remembered domains, ties to the domain of the lowest rank index, None with no mate."""
from __future__ import annotations

import pytest

from homing.engine.placement.domains import home_domains
from homing.engine.placement.job_kinds.levels import Level

from .helpers import rank, topo_memory


def R(rack: str | None = None, sp: str | None = None, **more: str) -> tuple:
    """A remembered topology path."""
    path = []
    if rack is not None:
        path.append(("rack", rack))
    if sp is not None:
        path.append(("superPod", sp))
    path.extend(more.items())
    return tuple(path)


SP4 = (Level("superPod", 4),)
SP_WHOLE = (Level("superPod"),)
RACK2_SP4 = (Level("rack", 2), Level("superPod", 4))

CASES = [
    # -- majority ---------------------------------------------------------------------------
    pytest.param({"0": ("a", R(sp="B")), "1": ("b", R(sp="A")), "2": ("c", R(sp="A")), "3": ("d", R(sp="A"))},
                 "0", SP4, None, ["A"], id="majority-beats-own-domain"),
    pytest.param({"0": ("a", R("r1", "s1")), "1": ("b", R("r2", "s1")), "2": ("c", R("r3", "s1")),
                  "3": ("d", R("r3", "s2"))},
                 "2", RACK2_SP4, None, ["r3", "s1"], id="majority-per-level"),
    pytest.param({"0": ("a", R("r1", "s1")), "1": ("b", R("r1", "s1")), "2": ("c", R("r2", "s2")),
                  "3": ("d", R("r2", "s2")), "4": ("e", R("r2", "s2"))},
                 "1", (Level("rack", 2), Level("superPod")), None, ["r1", "s2"], id="levels-of-different-block-sizes"),
    # -- ties ------------------------------------------------------------------------------------
    pytest.param({"2": ("c", R(sp="B")), "1": ("b", R(sp="A"))}, "3", SP4, None, ["A"],
                 id="tie-lowest-rank-not-insertion-order"),
    pytest.param({"0": ("a", R(sp="B")), "1": ("b", R(sp="A")), "2": ("c", R(sp="A")), "3": ("d", R(sp="B"))},
                 "2", SP4, None, ["B"], id="two-two-tie-to-rank-0"),
    pytest.param({"3": ("d", R(sp="Z")), "1": ("b", R(sp="A")), "2": ("c", R(sp="Z")), "0": ("a", R(sp="A"))},
                 "3", SP4, None, ["A"], id="tie-ignores-domain-name-order"),
    pytest.param({"5": ("f", R(sp="B")), "6": ("g", R(sp="C")), "7": ("h", R(sp="A"))},
                 "4", SP4, None, ["B"], id="three-way-tie-lowest-index-in-block"),
    # -- block boundaries: rank.index // block_size ----------------------------------------------
    pytest.param({"0": ("a", R(sp="A")), "1": ("b", R(sp="A")), "2": ("c", R(sp="A")), "3": ("d", R(sp="A")),
                  "4": ("e", R(sp="B"))},
                 "7", SP4, None, ["B"], id="second-block-sees-only-its-ranks"),
    pytest.param({"0": ("a", R(sp="A")), "4": ("e", R(sp="B")), "5": ("f", R(sp="B")), "6": ("g", R(sp="B"))},
                 "3", SP4, None, ["A"], id="last-rank-of-first-block"),
    pytest.param({"0": ("a", R(sp="A")), "1": ("b", R(sp="A"))}, "4", SP4, None, [None],
                 id="no-mate-in-block-none"),
    pytest.param({"0": ("a", R(sp="A")), "3": ("d", R(sp="B"))}, "2", (Level("superPod", 2),), None, ["B"],
                 id="block-size-2"),
    pytest.param({"0": ("a", R(sp="A")), "9": ("j", R(sp="B"))}, "5", (Level("superPod", 1),), None, [None],
                 id="block-size-1-own-memory-only"),
    # -- whole-job blocks ---------------------------------------------------------------------------
    pytest.param({"0": ("a", R(sp="A")), "10": ("k", R(sp="B")), "20": ("u", R(sp="B"))}, "3", SP_WHOLE, None, ["B"],
                 id="whole-job-majority"),
    pytest.param({"10": ("k", R(sp="B")), "0": ("a", R(sp="A"))}, "99", SP_WHOLE, None, ["A"],
                 id="whole-job-tie-lowest"),
    # -- rank without memory of its own ----------------------------------------------------------
    pytest.param({"0": ("a", R("r1", "s1")), "1": ("b", R("r1", "s1"))}, "1", RACK2_SP4, None, ["r1", "s1"],
                 id="own-memory"),
    pytest.param({"0": ("a", R("r1", "s1")), "2": ("c", R("r2", "s1"))}, "1", RACK2_SP4, None, ["r1", "s1"],
                 id="no-own-memory-gets-block-domains"),
    pytest.param({"0": ("a", R("r1", "s1"))}, "3", RACK2_SP4, None, [None, "s1"],
                 id="no-rack-mate-but-super-pod-mate"),
    # -- missing levels in memory ------------------------------------------------------------------
    pytest.param({"0": ("a", R(sp="A")), "1": ("b", R()), "2": ("c", R())}, "1", RACK2_SP4, None, [None, "A"],
                 id="mates-without-the-level-do-not-count"),
    pytest.param({"0": ("a", ()), "1": ("b", ())}, "0", RACK2_SP4, None, [None, None], id="no-topology-remembered"),
    # -- task specs ------------------------------------------------------------------------------------
    pytest.param({"ps/0": ("p0", R(sp="P")), "ps/1": ("p1", R(sp="P")), "ps/3": ("p3", R(sp="P")),
                  "worker/3": ("w3", R(sp="W"))},
                 "worker/1", SP4, None, ["W"], id="other-spec-same-indexes-not-mates"),
    pytest.param({"ps/3": ("p3", R(sp="P"))}, "worker/3", SP4, None, [None], id="only-other-spec-remembered"),
    pytest.param({"ps/0": ("p0", R(sp="P")), "ps/5": ("p5", R(sp="P")), "worker/9": ("w9", R(sp="W"))},
                 "worker/0", SP_WHOLE, None, ["W"], id="whole-job-per-spec"),
    pytest.param({"ps/0": ("p0", R(sp="P")), "0": ("a", R(sp="A"))}, "1", SP4, None, ["A"],
                 id="plain-keys-not-mates-of-spec-keys"),
    # -- by_group blocks (Volcano sub-groups) -----------------------------------------------------------
    pytest.param({"0": ("a", (("tier1", "h1"),), "g:r=0"), "1": ("b", (("tier1", "h2"),), "g:r=1"),
                  "5": ("f", (("tier1", "h2"),), "g:r=1"), "9": ("j", (("tier1", "h2"),), "g:r=1")},
                 "0", (Level("tier1", by_group=True),), "g:r=0", ["h1"], id="by-group-own-group-only"),
    pytest.param({"0": ("a", (("tier1", "h1"),), "g:r=0"), "7": ("h", (("tier1", "h3"),), "g:r=1"),
                  "8": ("i", (("tier1", "h3"),), "g:r=1")},
                 "2", (Level("tier1", by_group=True),), "g:r=1", ["h3"], id="by-group-ignores-indexes"),
    pytest.param({"0": ("a", (("tier1", "h1"), ("tier2", "t")), "g:r=0"),
                  "1": ("b", (("tier1", "h2"), ("tier2", "t")), "g:r=1"),
                  "2": ("c", (("tier1", "h2"), ("tier2", "u")), "g:r=1"),
                  "3": ("d", (("tier1", "h2"), ("tier2", "u")), "g:r=1"),
                  "4": ("e", (("tier1", "h2"), ("tier2", "u")), "g:r=1")},
                 "0", (Level("tier1", by_group=True), Level("tier2")), "g:r=0", ["h1", "u"],
                 id="by-group-inner-whole-job-outer"),
    pytest.param({"0": ("a", (("tier1", "h1"),), "g:r=0")}, "1", (Level("tier1", by_group=True),), "g:r=9", [None],
                 id="by-group-no-member-remembered"),
    pytest.param({"0": ("a", (("tier1", "h1"),)), "1": ("b", (("tier1", "h2"),)), "2": ("c", (("tier1", "h2"),))},
                 "0", (Level("tier1", by_group=True),), None, ["h2"], id="by-group-without-group-is-whole-job"),
]


@pytest.mark.parametrize("ranks, key, levels, group, expected", CASES)
def test_home_domains(ranks, key, levels, group, expected):
    assert home_domains(topo_memory(ranks), rank(key), levels, group) == expected


@pytest.mark.parametrize("levels", [pytest.param(SP4, id="one"), pytest.param(RACK2_SP4, id="two"),
                                    pytest.param((), id="none")])
def test_no_memory_is_none_at_every_level(levels):
    assert home_domains(None, rank("0"), levels, None) == [None] * len(levels)
