"""behaviour.md "Admission" Outcome: where a pod sent home landed (home, a decided block domain, or
elsewhere and why), and the decided domains read back from the decision annotation."""
from __future__ import annotations

import json

import pytest

from homing.engine.identity.podview import decided_domains
from homing.engine.memory.outcome import Outcome, classify
from homing.engine.model import Health

from .helpers import snapshot

H, S, U, M = Health.HEALTHY, Health.SUB_HEALTHY, Health.UNHEALTHY, Health.UNAVAILABLE
TOPOLOGY = {
    "home": (("rack", "r1"), ("superPod", "s1")),
    "mate": (("rack", "r1"), ("superPod", "s1")),
    "near": (("rack", "r2"), ("superPod", "s1")),
    "far": (("rack", "r9"), ("superPod", "s9")),
    "bare": (),
}
RACK_AND_SP = (("rack", "r1"), ("superPod", "s1"))


def cluster(home: Health | None = H):
    nodes = {n: H for n in TOPOLOGY}
    if home is None:
        del nodes["home"]
    else:
        nodes["home"] = home
    return snapshot(nodes, TOPOLOGY)


@pytest.mark.parametrize(
    "node, home_health, home_busy, domains, expected",
    [
        pytest.param("home", H, False, (), Outcome("home", "home"), id="home"),
        pytest.param("home", U, True, RACK_AND_SP, Outcome("home", "home"), id="home-even-if-unhealthy-and-busy"),
        pytest.param("mate", H, False, RACK_AND_SP, Outcome("domain", "domain"), id="same-rack"),
        pytest.param("near", H, False, RACK_AND_SP, Outcome("domain", "domain"), id="outer-domain-only"),
        pytest.param("near", H, False, (("rack", "r1"),), Outcome("elsewhere", "unknown"), id="not-in-the-decided-rack"),
        pytest.param("near", None, False, (("superPod", "s1"),), Outcome("domain", "domain"), id="domain-when-home-gone"),
        pytest.param("mate", H, False, (("superPod", "r1"),), Outcome("elsewhere", "unknown"),
                     id="value-of-another-level-does-not-count"),
        pytest.param("mate", H, False, (), Outcome("elsewhere", "unknown"), id="no-domains-decided"),
        pytest.param("far", None, False, RACK_AND_SP, Outcome("elsewhere", "home-gone"), id="home-gone"),
        pytest.param("far", U, False, RACK_AND_SP, Outcome("elsewhere", "home-unhealthy"), id="home-unhealthy"),
        pytest.param("far", S, False, RACK_AND_SP, Outcome("elsewhere", "home-unhealthy"), id="home-sub-healthy"),
        pytest.param("far", U, True, (), Outcome("elsewhere", "home-unhealthy"), id="unhealthy-before-busy"),
        pytest.param("far", H, True, RACK_AND_SP, Outcome("elsewhere", "home-busy"), id="home-busy"),
        pytest.param("far", M, False, RACK_AND_SP, Outcome("elsewhere", "home-unavailable"), id="home-cordoned"),
        pytest.param("far", M, True, RACK_AND_SP, Outcome("elsewhere", "home-unavailable"), id="cordoned-before-busy"),
        pytest.param("bare", H, False, RACK_AND_SP, Outcome("elsewhere", "unknown"), id="node-without-topology"),
        pytest.param("vanished", H, False, RACK_AND_SP, Outcome("elsewhere", "unknown"), id="node-not-in-snapshot"),
    ],
)
def test_classify(node, home_health, home_busy, domains, expected):
    assert classify("home", node, cluster(home_health), home_busy, domains) == expected


def decision(record) -> dict:
    return {"homing.io/decision": record if isinstance(record, str) else json.dumps(record)}


@pytest.mark.parametrize(
    "annotations, domains",
    [
        pytest.param(decision({"domains": ["rack=r1", "superPod=s1"]}), (("rack", "r1"), ("superPod", "s1")),
                     id="two-levels"),
        pytest.param(decision({"domains": ["tier1=leaf=0"]}), (("tier1", "leaf=0"),), id="split-on-first-equals"),
        pytest.param(decision({"domains": ["level1=g1", "junk", "level2=g2"]}), (("level1", "g1"), ("level2", "g2")),
                     id="entries-without-equals-skipped"),
        pytest.param(decision({"owner": "Job/ns/j", "rank": "0", "home": "n1", "reason": "home"}), (), id="no-domains"),
        pytest.param(decision({"domains": []}), (), id="empty-domains"),
        pytest.param(decision({"domains": None}), (), id="null-domains"),
        pytest.param({}, (), id="missing-annotation"),
        pytest.param(decision(""), (), id="empty-annotation"),
        pytest.param(decision("{not json"), (), id="malformed-json"),
        pytest.param(decision("[1, 2]"), (), id="json-list"),
        pytest.param(decision("null"), (), id="json-null"),
        pytest.param(decision('"rack=r1"'), (), id="json-string"),
    ],
)
def test_decided_domains(annotations, domains):
    assert decided_domains(annotations) == domains


def test_decided_domains_round_trip_through_decision_annotation():
    from homing.engine.placement.decide import Decision

    d = Decision(outcome="domain", reason="no-memory", kind="super-pod", domains=["rack=r2", "superPod=S1"])
    assert decided_domains(d.annotations()) == (("rack", "r2"), ("superPod", "S1"))


@pytest.mark.parametrize(
    "record",
    [
        pytest.param({"domains": 5}, id="number"),
        pytest.param({"domains": True}, id="boolean"),
        pytest.param({"domains": "rack=r1"}, id="string"),
    ],
)
def test_decided_domains_not_a_list_is_malformed(record):
    assert decided_domains(decision(record)) == ()
