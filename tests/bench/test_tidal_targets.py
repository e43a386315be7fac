"""bench/tidal.py checks each homing variant against the tidal days' targets using the runs
without homing made under the same cluster settings (a `-fast-scale-in` run against the
plain Volcano run with that setting, never against the default one)."""
from __future__ import annotations

import pytest


def run(home_rate: float, pull_minutes: float) -> dict:
    return {"home_rate": home_rate, "feasible_home_rate": 1.0, "replacement_pull_minutes": pull_minutes,
            "pull_minutes": pull_minutes + 100, "gang_restarts": 3, "create_to_scheduled_p50_s": 1.0}


def test_each_setting_is_checked_against_its_own_baseline(tidal):
    runs = {
        "volcano": run(0.1, 100.0),
        "volcano+homing": run(0.5, 40.0),
        "volcano-fast-scale-in": run(0.1, 10.0),
        "volcano+homing-fast-scale-in": run(0.9, 5.0),
    }
    rows = {(r["variant"], r["target"]): r for r in tidal.targets(runs)}
    assert {v for v, _ in rows} == {"volcano+homing", "volcano+homing-fast-scale-in"}
    pulls = "re-placement pull minutes <= 0.30 x Volcano's"
    assert rows[("volcano+homing", pulls)]["measured"] == 0.4  # 40 / 100
    assert rows[("volcano+homing-fast-scale-in", pulls)]["measured"] == 0.5  # 5 / 10, not 5 / 100
    assert rows[("volcano+homing-fast-scale-in", "home rate >= 0.80")]["met"] is True


def test_a_setting_without_its_volcano_run_is_not_checked(tidal):
    rows = tidal.targets({"volcano": run(0.1, 100.0), "volcano+homing-fast-scale-in": run(0.9, 5.0)})
    assert rows == []


@pytest.mark.parametrize("variant, scheduler, off, suffix, controller_manager, volcano", [
    ("volcano+gangpreempt+homing-fast-scale-in", "volcano+gangpreempt+homing", (), "-fast-scale-in",
     ("--kube-api-qps=1000", "--kube-api-burst=1000"), ()),
    ("volcano+homing-all-nodes-fast-scale-in", "volcano+homing", (), "-all-nodes-fast-scale-in",
     ("--kube-api-qps=1000", "--kube-api-burst=1000"), ("--percentage-nodes-to-find=100",)),
    ("volcano-all-nodes", "volcano", (), "-all-nodes", (), ("--percentage-nodes-to-find=100",)),
    ("volcano+homing-no-free-room", "volcano+homing", ("free-room",), "", (), ()),
    ("volcano+homing-no-image-warm-no-vacant-homes-fast-scale-in", "volcano+homing", ("image-warm", "vacant-homes"),
     "-fast-scale-in", ("--kube-api-qps=1000", "--kube-api-burst=1000"), ()),
    ("volcano", "volcano", (), "", (), ()),
    ("volcano+homing-no-claimed-homes", "volcano+homing", ("claimed-homes",), "", (), ()),
    ("volcano+gangpreempt+homing-no-deletion-marks", "volcano+gangpreempt+homing", ("deletion-marks",), "", (), ()),
])
def test_one_grammar_reads_preferences_off_and_setting_suffixes(tidal, variant, scheduler, off, suffix, controller_manager,
                                                                volcano):
    v = tidal.parse_variant(variant)
    assert (v.scheduler, v.off, v.suffix) == (scheduler, off, suffix)
    assert (v.setting.controller_manager, v.setting.volcano) == (controller_manager, volcano)
    assert v.unset + v.suffix == variant  # nothing of the name is lost
    assert v.env == {("HOMING_DELETION_COST__ENABLED" if p == "deletion-marks" else
                      f"HOMING_PREFERENCES__{p.replace('-', '_').upper()}"): "false" for p in off}


def test_two_settings_together_are_their_own_group(tidal):
    runs = {"volcano-fast-scale-in": run(0.1, 10.0), "volcano+homing-fast-scale-in": run(0.9, 5.0),
            "volcano-all-nodes-fast-scale-in": run(0.1, 50.0), "volcano+homing-all-nodes-fast-scale-in": run(0.9, 5.0)}
    pulls = "re-placement pull minutes <= 0.30 x Volcano's"
    rows = {(r["variant"], r["target"]): r["measured"] for r in tidal.targets(runs)}
    assert rows[("volcano+homing-fast-scale-in", pulls)] == 0.5
    assert rows[("volcano+homing-all-nodes-fast-scale-in", pulls)] == 0.1


def test_the_all_pulls_target_says_how_low_first_placements_alone_leave_it(tidal):
    """With no re-placement pull at all, the ratio is still the first placements' share."""
    runs = {"volcano": run(0.1, 100.0), "volcano+homing": run(0.9, 0.0)}  # 100 + 100 vs 0 + 100 pull minutes
    (row,) = [r for r in tidal.targets(runs) if r["target"].startswith("all pull minutes")]
    assert row["measured"] == 0.5 and row["floor"] == 0.5
    runs["volcano+homing"] = run(0.9, 20.0)
    (row,) = [r for r in tidal.targets(runs) if r["target"].startswith("all pull minutes")]
    assert row["measured"] == 0.6 and row["floor"] == 0.5


def test_ablations_are_not_checked_against_the_targets(tidal):
    """homing with a preference off shows what that preference buys; it is not a candidate."""
    runs = {"volcano": run(0.1, 100.0), "volcano+homing": run(0.9, 5.0), "volcano+homing-no-image-warm": run(0.5, 50.0),
            "volcano-fast-scale-in": run(0.1, 10.0), "volcano+homing-no-free-room-fast-scale-in": run(0.5, 5.0)}
    assert {r["variant"] for r in tidal.targets(runs)} == {"volcano+homing"}


def test_the_replacement_pull_targets_say_how_low_cold_pulls_leave_them(tidal):
    """Cold pulls (no node holding the image had room) are the re-placement floor; a run
    recorded before they were counted has no floor rather than a wrong one."""
    runs = {"volcano": run(0.1, 100.0), "volcano+gangpreempt": run(0.2, 10.0),
            "volcano+gangpreempt+homing": {**run(0.9, 8.0), "cold_at_bind_replacement_pull_minutes": 4.0,
                                           "cold_replacement_pull_minutes": 6.0}}
    rows = {r["target"]: r for r in tidal.targets(runs)}
    best = rows["re-placement pull minutes <= 0.5 x best without homing"]
    assert (best["measured"], best["met"], best["floor"]) == (0.8, False, "0.4 / 0.6")  # 8 / 10; 4 / 10 and 6 / 10
    assert rows["re-placement pull minutes <= 0.30 x Volcano's"]["floor"] == "0.04 / 0.06"
    del runs["volcano+gangpreempt+homing"]["cold_at_bind_replacement_pull_minutes"]
    rows = {r["target"]: r for r in tidal.targets(runs)}
    assert "floor" not in rows["re-placement pull minutes <= 0.5 x best without homing"]


def test_a_run_that_did_not_count_cold_pulls_shows_a_question_mark_not_zero(tidal):
    """Runs recorded before a count existed must not read as 'no cold pull'."""
    step = {"by_phase": {"night": {"replacements": 2, "home": 1, "feasible": 1}},
            "pulls_by_phase": {"night": {"replacement": 1, "cold": 1}}}
    runs = {"old": {**step, "cold_replacement_pulls": 1},
            "new": {**step, "cold_replacement_pulls": 1, "cold_at_bind_replacement_pulls": 0}}
    text = tidal.table({"days": {"tidal": {"64": runs}}})
    assert "| old | night | 2 | 1 | 1 |  | 0 / 1 (?–1) |" in text
    assert "| new | night | 2 | 1 | 1 |  | 0 / 1 (0–1) |" in text


def _run(home_rate, feasible, pulls, cold, restarts, p50):
    return {"home_rate": home_rate, "feasible_home_rate": feasible, "replacement_pulls": pulls,
            "cold_at_bind_replacement_pulls": cold, "gang_restarts": restarts, "create_to_scheduled_p50_s": p50}


def test_the_home_rule_is_checked_in_every_run_against_its_own_scheduler(tidal):
    """Two repeats: the medians would pass, the second run misses; the gang-aware variant is
    held to 0.90 and compared with the gang-aware action alone, not with plain Volcano."""
    runs = {
        "volcano+gangpreempt": {"repeats": [_run(0.3, 0.5, 9, 1, 3, 1.0), _run(0.3, 0.5, 9, 1, 3, 1.0)]},
        "volcano+gangpreempt+homing": {"repeats": [_run(0.95, 1.0, 1, 1, 2, 1.0), _run(0.85, 1.0, 2, 1, 4, 1.2)]},
        "volcano": {"repeats": [_run(0.1, 0.5, 20, 1, 9, 0.5)]},
        "volcano+homing-no-claimed-homes": {"repeats": [_run(0.1, 0.1, 20, 1, 9, 9.0)]},
    }
    rows = {r["target"]: r for r in tidal.home_rule_targets(runs)}
    assert {r["variant"] for r in tidal.home_rule_targets(runs)} == {"volcano+gangpreempt+homing"}
    assert rows["home rate >= 0.90 (gang-aware actions, kube-scheduler's gangs)"]["measured"] == [0.95, 0.85]
    assert rows["home rate >= 0.90 (gang-aware actions, kube-scheduler's gangs)"]["met"] is False
    assert "home rate >= 0.80 (plain preempt/reclaim)" not in rows
    assert rows["feasible home rate = 1.00"]["met"] is True
    assert rows["re-placement pulls <= 1.1 x the run's certain cold floor"]["met"] is False  # 2 > 1.1
    assert rows["gang restarts <= the same scheduler without homing"]["measured"] == [(2, 3), (4, 3)]
    assert rows["create->scheduled p50 <= 1.05 x the same scheduler without homing"]["measured"] == [1.0, 1.2]


def test_kube_schedulers_gangs_are_held_to_the_gang_aware_bar_and_a_fifth_of_its_pulls(tidal):
    """kube-scheduler + homing against kube-scheduler alone in the same repeat: home rate
    0.90, re-placement pulls at most 0.2 x its own; Volcano's cold-floor target is not
    applied (the issue's bar for this day is the ratio)."""
    runs = {
        "kube-scheduler": {"repeats": [_run(0.2, 0.5, 20, 1, 2, 1.0), _run(0.2, 0.5, 10, 1, 2, 1.0)]},
        "kube-scheduler+homing": {"repeats": [_run(0.95, 1.0, 4, 1, 2, 1.0), _run(0.92, 1.0, 3, 1, 2, 1.0)]},
    }
    rows = {r["target"]: r for r in tidal.home_rule_targets(runs)}
    assert {r["variant"] for r in tidal.home_rule_targets(runs)} == {"kube-scheduler+homing"}
    assert rows["home rate >= 0.90 (gang-aware actions, kube-scheduler's gangs)"]["met"] is True
    assert "home rate >= 0.80 (plain preempt/reclaim)" not in rows
    assert "re-placement pulls <= 1.1 x the run's certain cold floor" not in rows
    pulls = rows["re-placement pulls <= 0.2 x the same scheduler without homing"]
    assert pulls["measured"] == [0.2, 0.3] and pulls["met"] is False  # 3 of 10 in the second repeat
    assert tidal.DAYS["kube-gangs"].variants == ("kube-scheduler", "kube-scheduler+homing")


def test_the_webhook_can_be_switched_off_like_a_preference(tidal):
    """`-no-webhook`: homing watches, remembers and marks, but the leader writes no webhook
    configuration, so the day shows what its admissions cost."""
    v = tidal.parse_variant("volcano+gangpreempt+homing-no-webhook-fast-scale-in")
    assert (v.scheduler, v.off, v.suffix) == ("volcano+gangpreempt+homing", ("webhook",), "-fast-scale-in")
    assert v.env == {"HOMING_WEBHOOK__MANAGE_CONFIGURATION": "false"}


def test_a_histogram_is_summed_over_the_day_only(tidal):
    """Counts from before the day (the operator's start-up, say) are taken off; a histogram
    with nothing in the day is left out."""
    before = {"round_trip": {0.1: 10.0, 1.0: 10.0, float("inf"): 10.0}, "idle": {1.0: 5.0, float("inf"): 5.0}}
    after = {"round_trip": {0.1: 10.0, 1.0: 110.0, float("inf"): 110.0}, "idle": {1.0: 5.0, float("inf"): 5.0}}
    summary = tidal.histogram_summary(after, before)
    assert summary == {"round_trip": {"n": 100, "p50": 0.55, "p99": 0.991}}


async def test_volcanos_sessions_and_each_action_are_read_from_its_metrics(tidal):
    text = "\n".join([
        "# TYPE volcano_e2e_scheduling_latency_milliseconds histogram",
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="100"} 3',
        'volcano_e2e_scheduling_latency_milliseconds_bucket{le="+Inf"} 4',
        "volcano_e2e_scheduling_latency_milliseconds_sum 500", "volcano_e2e_scheduling_latency_milliseconds_count 4",
        "# TYPE volcano_action_scheduling_latency_milliseconds histogram",
        *[f'volcano_action_scheduling_latency_milliseconds_bucket{{action="{a}",le="{le}"}} {n}'
          for a, rows in (("allocate", (("1", 2), ("+Inf", 4))), ("gangpreempt", (("1", 4), ("+Inf", 4)))) for le, n in rows],
        *[f'volcano_action_scheduling_latency_milliseconds_{x}{{action="{a}"}} 4'
          for a in ("allocate", "gangpreempt") for x in ("sum", "count")],
        "",
    ])

    class Cluster:
        operator = None  # no homing: no admission figures

        class scheduling:
            @staticmethod
            def metrics() -> str:
                return text

        @staticmethod
        def cpu_seconds() -> dict[str, float]:
            return {"vc-scheduler": 2.5}

    read = await tidal.readings(Cluster)
    assert set(read.scheduler) == {"session_ms", "allocate_ms", "gangpreempt_ms"}
    assert read.scheduler["allocate_ms"] == {1.0: 2.0, float("inf"): 4.0}
    assert read.scheduler["session_ms"][100.0] == 3.0
    assert (read.admission, read.connections) == ({}, 0.0)


def _histogram(name: str, counts: dict[str, int], labels: str = "") -> list[str]:
    return [f"# TYPE {name} histogram", *[f'{name}_bucket{{{labels}le="{le}"}} {n}' for le, n in counts.items()]]


async def test_a_no_op_webhook_day_reads_the_api_servers_round_trip_and_the_no_ops_loop(tidal):
    """`+noopwebhook`: no operator, yet the API server's round trip to the webhook in homing's place
    is read (homing's entry names only, so another webhook's calls stay out), and the no-op's own
    loop lag from its metrics port."""
    import http.server
    import threading

    webhook = "apiserver_admission_webhook_admission_duration_seconds"
    apiserver = "\n".join([
        *_histogram(webhook, {"0.1": 2, "+Inf": 5}, 'name="namespaces.pods.homing.io",operation="CREATE",rejected="false",type="admit",'),
        *_histogram(webhook, {"0.1": 9, "+Inf": 9}, 'name="other.example.io",operation="CREATE",rejected="false",type="admit",'),
        ""])
    lag = "\n".join([*_histogram("homing_event_loop_lag_seconds", {"0.01": 7, "+Inf": 8}), ""])

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(lag.encode())

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    class Answer:
        async def read(self) -> bytes:
            return apiserver.encode()

    class Cluster:
        operator = None

        class kube:
            class api:
                @staticmethod
                async def call_api(path, method, **_):
                    assert (path, method) == ("/metrics", "GET")
                    return Answer()

        class scheduling:
            @staticmethod
            def metrics() -> str:
                return ""

        @staticmethod
        def cpu_seconds() -> dict[str, float]:
            return {}

    try:
        read = await tidal.readings(Cluster, server.server_address[1])
    finally:
        server.shutdown()
    assert read.admission == {"apiserver_round_trip": {0.1: 2.0, float("inf"): 5.0},
                              "noop_loop_lag": {0.01: 7.0, float("inf"): 8.0}}
    assert (read.connections, read.scheduler) == (0.0, {})
    assert tidal.parse_variant("volcano+gangpreempt+noopwebhook").scheduler.endswith(tidal.NOOP)


def test_the_day_is_the_difference_of_two_readings(tidal):
    before = tidal.Readings({"homing": 1.0}, {"round_trip": {0.1: 1.0, float("inf"): 1.0}}, 3.0, {})
    after = tidal.Readings({"homing": 4.25, "vc-scheduler": 2.0}, {"round_trip": {0.1: 3.0, float("inf"): 3.0}}, 10.0, {})
    assert tidal.the_day(before, after) == {
        "cpu_s": {"homing": 3.2, "vc-scheduler": 2.0},
        "admission_s": {"round_trip": {"n": 2, "p50": 0.05, "p99": 0.099}},
        "admission_connections": 7, "scheduler": {}}


@pytest.mark.parametrize("variant, day, stepped", [
    # Volcano's days scale in as the shipped autoscaler does, one gang at a time, unless told
    ("volcano+gangpreempt+homing", "tidal", True),
    ("volcano+homing", "shared", True),
    ("volcano+gangpreempt+homing-at-once-scale-in", "tidal", False),
    ("volcano+gangpreempt-at-once-scale-in-fast-scale-in", "tidal", False),
    ("volcano+gangpreempt+homing-stepped-scale-in", "tidal", True),
    ("volcano+gangpreempt+homing-fast-scale-in", "shared", True),
    # kube-scheduler's waiting gangs take turns: its day scales in at once unless told
    ("kube-scheduler+homing", "kube-gangs", False),
    ("kube-scheduler+homing-stepped-scale-in", "kube-gangs", True),
])
def test_a_night_scales_in_by_steps_as_the_day_or_the_variant_says(tidal, variant, day, stepped):
    v = tidal.parse_variant(variant)
    assert tidal.stepped_nights(v, tidal.DAYS[day]) is stepped
    assert v.unset + v.suffix == variant


@pytest.mark.parametrize("variant, setting", [
    ("volcano+gangpreempt+homing", None),  # no scale-in setting: the day decides
    ("volcano+gangpreempt+homing-fast-scale-in", None),
    ("volcano+gangpreempt+homing-stepped-scale-in", True),
    ("volcano+gangpreempt+homing-at-once-scale-in", False),
])
def test_only_a_scale_in_setting_overrides_the_days_own_nights(tidal, variant, setting):
    assert tidal.parse_variant(variant).setting.stepped_scale_in is setting


def test_a_merged_file_says_what_it_merged(tidal, tmp_path):
    """Merging files of 304-node runs: the top-level size and repeat count are the merged
    runs' (they were argparse's defaults, 64 nodes and 3 repeats, with no runs under them)."""
    def results(repeats: int) -> dict:
        runs = {"volcano+gangpreempt": [run(0.2, 90.0)] * repeats, "volcano+gangpreempt+homing": [run(0.85, 30.0)] * repeats}
        return tidal.summarise({("tidal", 304, v): rs for v, rs in runs.items()}, 304)

    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(tidal.json.dumps(results(1)))
    two.write_text(tidal.json.dumps(results(2)))
    merged = tidal.merge([one, two])
    assert merged["nodes"] == 304
    assert merged["repeats"] == 3
    assert set(merged["runs"]) == {"volcano+gangpreempt", "volcano+gangpreempt+homing"}
    assert len(merged["days"]["tidal"]["304"]["volcano+gangpreempt+homing"]["repeats"]) == 3


def test_the_pulls_over_the_floor_are_listed_for_each_homing_run_that_counted_them(tidal):
    counted = {"taken-by-home": 3}
    runs = {
        "volcano+gangpreempt": {"repeats": [{"replacement_pulls_over_the_floor": {"taken-by-other-image": 9}}]},
        "volcano+gangpreempt+homing": {"repeats": [{"replacement_pulls_over_the_floor": counted}, {}]},
        "volcano+homing": {"repeats": [{}]},  # run before the recorder counted them
    }
    assert tidal.over_the_floor(runs) == {"volcano+gangpreempt+homing": [counted]}


@pytest.mark.parametrize("replicas, expected", [
    (6, {"qwen": 4, "bert": 2}),
    (26, {"qwen": 17, "bert": 9}),  # 17.33 and 8.67: the larger remainder takes the odd one
    (1, {"qwen": 1, "bert": 1}),  # each service keeps one replica
])
def test_the_tide_is_shared_out_by_the_services_shares(tidal, replicas, expected):
    assert tidal.split(replicas, tidal.TWO_SERVICES) == expected


def test_the_crowded_days_peak_needs_fourteen_nodes_more_than_are_free_at_48(tidal):
    d = tidal.DAYS["crowded"]
    nodes = 48
    training = nodes * 3 // 4 // d.gang * d.gang
    base = max(2, nodes // 8)
    free = nodes - training - base
    assert round(nodes * d.peak) - free == 14
    assert {image for image, _ in tidal.DAYS["crowded-solo"].trains} == {i for i in tidal.CROWDED_IMAGES if i.startswith("train-")}


def test_pulls_first_every_run_and_the_median_against_the_scheduler_alone(tidal):
    """Issue 44: in every run homing's re-placement pull minutes are at most the same
    scheduler's alone in the same repeat, and over the runs the median at most half."""
    def r(minutes):
        return {**_run(0.9, 1.0, 3, 1, 2, 1.0), "replacement_pull_minutes": minutes}

    runs = {"volcano+gangpreempt": {"repeats": [r(32.0), r(48.0), r(15.6)]},
            "volcano+gangpreempt+homing": {"repeats": [r(10.0), r(20.0), r(20.0)]}}
    rows = {x["target"]: x for x in tidal.home_rule_targets(runs)}
    every = rows["re-placement pull minutes <= the same scheduler without homing"]
    assert every["measured"] == [(10.0, 32.0), (20.0, 48.0), (20.0, 15.6)] and every["met"] is False
    median = rows[tidal.MEDIAN_PULLS]
    assert median["measured"] == 0.625 and median["met"] is False  # 20 / 32
    runs["volcano+gangpreempt+homing"] = {"repeats": [r(10.0), r(12.0), r(0.0)]}
    rows = {x["target"]: x for x in tidal.home_rule_targets(runs)}
    assert rows["re-placement pull minutes <= the same scheduler without homing"]["met"] is True
    assert rows[tidal.MEDIAN_PULLS]["met"] is True  # 10 / 32


def test_a_results_file_names_the_operator_code_that_made_it_and_a_merge_keeps_each(tidal, tmp_path):
    """Runs made by another checkout's operator (HOMING_E2E_OPERATOR_PATH) or by uncommitted
    changes looked like the tree's own in the file; a merged file mixed them silently."""
    here = {"commit": "aaaa", "uncommitted_changes": False, "this_tree": True}
    there = {"commit": "bbbb", "uncommitted_changes": True, "this_tree": False}

    def results(code: dict) -> dict:
        return tidal.summarise({("tidal", 64, "volcano+gangpreempt+homing"): [run(0.85, 30.0)]}, 64, [code])

    one, two, again = tmp_path / "one.json", tmp_path / "two.json", tmp_path / "again.json"
    one.write_text(tidal.json.dumps(results(here)))
    two.write_text(tidal.json.dumps(results(there)))
    again.write_text(tidal.json.dumps(results(here)))
    merged = tidal.merge([one, two, again])
    assert merged["operator_code"] == [here, there]
    assert tidal.table(merged).startswith("Operator code: aaaa (this tree), bbbb with uncommitted changes (another checkout)")


def test_the_operator_code_follows_the_checkout_the_operator_imports(checkout, monkeypatch):
    from homing_e2e.operator_process import operator_code

    monkeypatch.delenv("HOMING_E2E_OPERATOR_PATH", raising=False)
    assert operator_code()["this_tree"] is True
    head = checkout.commit()
    monkeypatch.setenv("HOMING_E2E_OPERATOR_PATH", str(checkout.operator))
    assert operator_code() == {"commit": head, "uncommitted_changes": False, "this_tree": False}
    checkout.write("x = 2\n")
    assert operator_code()["uncommitted_changes"] is True
