"""bench/mindcluster_scenarios.py's pure parts, with no cluster: what a scenario counts as
kept, who the verdict names, the plugin's boosts read from its log, and the table."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def sc(bench_script):
    return bench_script("mindcluster_scenarios")


def row(sc, key="train-0/worker/1", home="npu-001", node="npu-001", outcome="home"):
    return sc.Row("night", key, home, node, outcome, True)


def test_the_fault_scenario_wants_healthy_ranks_home_and_the_faulted_rank_away(sc):
    ctx = {"avoid": "npu-000"}
    assert sc.healthy_home_faulted_away(row(sc), ctx)
    assert not sc.healthy_home_faulted_away(row(sc, node="npu-009", outcome="elsewhere"), ctx)
    assert not sc.healthy_home_faulted_away(row(sc, home="npu-000", node="npu-000"), ctx)  # back on its faulted node
    assert sc.healthy_home_faulted_away(row(sc, home="npu-000", node="npu-009", outcome="elsewhere"), ctx)
    s = sc.SCENARIOS["fault"]
    rows = [row(sc, home="npu-000", node="npu-000"), row(sc), row(sc, node="npu-012", outcome="elsewhere")]
    t = sc.tally(s, rows, pulls=1, pull_minutes=4.0, context=ctx)
    assert (t.kept, t.of, t.home, t.pulls) == (1, 3, 2, 1)


def test_the_super_pod_scenario_counts_only_the_ranks_whose_node_was_free(sc):
    ctx = {"avoid": "npu-000"}
    rows = [row(sc, home="npu-000", node="npu-009", outcome="elsewhere"), row(sc), row(sc, node="npu-012", outcome="elsewhere")]
    t = sc.tally(sc.SCENARIOS["superpod"], rows, pulls=2, pull_minutes=8.0, context=ctx)
    assert (t.kept, t.of, t.home) == (1, 2, 1)


@pytest.mark.parametrize(("alone", "with_homing", "who"), [
    ((3, 8, 5), (8, 8, 0), "homing"),
    ((8, 8, 0), (5, 8, 3), "plugin"),
    ((8, 8, 0), (8, 8, 0), "both"),
    ((5, 8, 3), (5, 8, 3), "same"),
    ((5, 8, 3), (5, 8, 1), "homing"),  # kept alike, fewer pulls
    ((9, 12, 3), (8, 12, 4), "same"),  # one re-placement, one pull apart: no winner from one run each
    ((7, 8, 1), (8, 8, 0), "same"),
    ((0, 0, 0), (8, 8, 0), "none"),
])
def test_the_winner_is_who_kept_more_then_who_pulled_less(sc, alone, with_homing, who):
    a, h = (sc.Tally(kept, of, kept, pulls, pulls * 4.0) for kept, of, pulls in (alone, with_homing))
    assert sc.winner(a, h) == who


def test_a_verdict_names_the_winner_gives_its_reason_and_the_figures(sc):
    s = sc.SCENARIOS["restart"]
    a, h = sc.Tally(3, 8, 3, 5, 20.0), sc.Tally(8, 8, 8, 0, 0.0)
    assert sc.verdict(s, a, h).startswith("homing keeps them — homing's memory is in PlacementMemory objects")
    assert sc.figures(s, a, h) == "home: plugin alone 3/8 (5 pulls), plugin + homing 8/8 (0 pulls)"
    # an outcome the scenario has no reason for says so rather than inventing one
    assert "not what the designs predict" in sc.verdict(s, sc.Tally(8, 8, 8, 0, 0.0), sc.Tally(3, 8, 3, 5, 20.0))


def test_a_win_by_pulls_alone_says_so_and_gives_the_reason_for_keeping_alike(sc):
    s = sc.SCENARIOS["superpod"]  # both re-planned the job: none home, fewer pulls with homing
    a, h = sc.Tally(0, 7, 0, 8, 32.0), sc.Tally(0, 7, 0, 4, 16.0)
    assert sc.winner(a, h) == "homing"
    assert sc.verdict(s, a, h) == f"kept alike; homing pulls less — {s.why['same']}"
    assert sc.label(h, a) == "kept alike; the plugin alone pulls less"
    assert sc.label(sc.Tally(3, 8, 3, 5, 20.0), sc.Tally(8, 8, 8, 0, 0.0)) == "homing keeps them"


def test_every_scenario_has_a_reason_for_what_the_designs_predict(sc):
    for s in sc.SCENARIOS.values():
        assert s.steps and s.key_prefix and s.superpods in (2, 3)
        assert {"homing", "same"} <= set(s.why) or {"both", "homing"} <= set(s.why), s.name


def test_boosts_count_the_last_boost_of_each_task(sc):
    log = "\n".join([
        "I1206 factory.go:901] addPreferPreviousNodeScore: task=ai/t-worker-0 rank=0 boosted otherNode=npu-009 score=892",
        "I1206 factory.go:901] addPreferPreviousNodeScore: task=ai/t-worker-0 rank=0 boosted selfNode=npu-000 score=892",
        "I1206 factory.go:901] addPreferPreviousNodeScore: task=ai/t-worker-1 rank=1 boosted peerNode=npu-002 score=892",
        "I1206 factory.go:881] addPreferPreviousNodeScore: fault pod task=ai/t-worker-2 rank=2 fallback selfNode=npu-003 score=1",
        "I1206 something else entirely",
        "I1206 job.go:73] job <ai/train-0> cached super pods are invalid or prefer-previous-node is disabled, need to reschedule",
    ])
    assert sc.boosts(log) == {"fault-self": 1, "peer": 1, "self": 1, "superpod-replan": 1}


def test_the_table_and_verdicts_from_results_with_a_failed_run(sc):
    home = [row(sc, key=f"train-0/worker/{i}", home=f"npu-00{i}", node=f"npu-00{i}").__dict__ for i in range(8)]
    away = [{**r, "node": "npu-020", "outcome": "elsewhere"} if i < 5 else r for i, r in enumerate(home)]
    ok = {"kept": 0, "of": 0, "home": 0, "pulls": 0, "pull_minutes": 0.0, "rows": home,  # kept/of counted from the rows
          "plugin_boosts": {"self": 8}, "restarts": 1, "unbound_by_step": {}}
    data = {"scenarios": {"restart": {"runs": {sc.ALONE: {**ok, "rows": away, "pulls": 5, "pull_minutes": 20.0},
                                               sc.WITH_HOMING: ok}},
                          "marks": {"runs": {sc.ALONE: {"failed": "TimeoutError: boom"}, sc.WITH_HOMING: ok}}}}
    judged = sc.judged(data)
    assert judged["scenarios"]["restart"]["winner"] == "homing"
    assert judged["scenarios"]["restart"]["figures"] == "home: plugin alone 3/8 (5 pulls), plugin + homing 8/8 (0 pulls)"
    assert "verdict" not in judged["scenarios"]["marks"]  # no verdict from one run
    text = sc.table(judged)
    assert "| 1. scheduler restarted while a gang is pending | home | 3/8 (5) | 8/8 (0) | homing keeps them" in text
    assert "| failed | 8/8 (0) |" in text and "failed: TimeoutError: boom" in text
    assert "night train-0/worker/7: npu-007 -> npu-007 home" in text
    assert "off_verdict" not in judged["scenarios"]["restart"] and text.count("| not run |  |") == 2


def test_prefer_previous_node_off_with_homing_is_judged_against_the_plugin_alone(sc):
    home = [row(sc, key=f"train-0/worker/{i}", home=f"npu-00{i}", node=f"npu-00{i}").__dict__ for i in range(8)]
    away = [{**r, "node": "npu-020", "outcome": "elsewhere"} if i < 2 else r for i, r in enumerate(home)]
    ok = {"kept": 0, "of": 0, "home": 0, "pulls": 0, "pull_minutes": 0.0, "rows": home,
          "plugin_boosts": {}, "restarts": 1, "unbound_by_step": {}}
    data = {"scenarios": {"superpod-control": {"runs": {sc.ALONE: ok, sc.WITH_HOMING: ok,
                                                        sc.OFF_WITH_HOMING: {**ok, "rows": away, "pulls": 2, "pull_minutes": 8.0}}}}}
    judged = sc.judged(data)["scenarios"]["superpod-control"]
    assert judged["winner"] == "both" and judged["off_winner"] == "plugin"
    assert judged["off_verdict"] == "the plugin alone keeps more"  # the prefer-on reasons are not borrowed
    assert judged["off_figures"] == "home: plugin alone 8/8 (0 pulls), prefer-previous-node off + homing 6/8 (2 pulls)"
    text = sc.table(data)
    assert "| 8/8 (0) | 8/8 (0) | both keep them" in text and "| 6/8 (2) | the plugin alone keeps more |" in text
