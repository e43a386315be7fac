"""What a person reads, and what a script parses, of an explanation."""
from __future__ import annotations

import json

from homing.config import Scope
from homing.engine.memory.entries import FaultMark, OwnerMemory, RankEntry, Stats
from homing.explain import explain_owner, explain_pod
from homing.explain.render import as_json, owner_text, pod_text

from .test_owner import HOUR, NOW, objects, owner
from .test_pod import HOME, OPTED_IN, event, pod


def test_pod_text_names_home_decision_avoided_and_outcome():
    decision = {**HOME, "avoid": ["node-c"], "prefer": ["image-warm"], "kind": "superpod", "domains": ["superpod=5"]}
    x = explain_pod(pod(decision, "node-b"), [event("PlacedAwayFromHome", "bound to node-b, home was node-a (elsewhere: home-busy)")],
                    OPTED_IN, Scope())
    lines = pod_text(x).splitlines()
    assert "Home:        node-a" in lines and "Avoided:     node-c" in lines
    assert "Topology:    superpod job, home domains superpod=5" in lines
    assert any(line.startswith("Outcome:") and "home was busy" in line for line in lines)
    assert any(line.startswith("Also:") and "hold the pod's images" in line for line in lines)


def test_pod_text_without_a_decision():
    text = pod_text(explain_pod(pod(), [], OPTED_IN, Scope()))
    assert "no decision recorded" in text and "Home:" not in text


def test_owner_text_rates_ranks_and_faults():
    mem = OwnerMemory(owner=owner(), last_seen=NOW, stats=Stats(admitted=5, home=3, elsewhere=1),
                      ranks={"0": RankEntry("n0", NOW - 60, warm=True, faults=[FaultMark("bad", NOW - 30)]),
                             "1": RankEntry("n1", NOW - 60, previous_node="n9")})
    text = owner_text(explain_owner(objects(mem), "Job", "llama", NOW, HOUR))
    assert "Home rate:   75% home (3 home, 0 domain, 1 elsewhere of 4 placements; 5 admitted)" in text
    assert "Avoids:      bad (ranks 0)" in text
    assert any(line.split()[:4] == ["1", "n1", "no", "n9"] for line in text.splitlines())


def test_json_is_the_whole_explanation():
    x = explain_pod(pod(HOME, "node-a"), [], OPTED_IN, Scope())
    got = json.loads(as_json(x))
    assert got["home"] == "node-a" and got["outcome"]["result"] == "home" and got["decided"] is True
