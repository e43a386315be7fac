"""manifests/monitoring without a cluster: every query is PromQL a real parser accepts,
every alert says how bad and what it means, the dashboard's panels do not overlap. That
the metrics exist is tests/integration/test_monitoring.py's."""
from __future__ import annotations

import itertools

import pytest
import yaml

from homing_e2e import monitoring as m

QUERIES = m.dashboard_queries() + m.rule_queries()


@pytest.mark.parametrize("query", QUERIES, ids=[q.where + " " + q.expr[:40] for q in QUERIES])
def test_every_query_parses_and_reads_homing_metrics(query):
    """homing's own, or (the alerts on the webhook as the API server sees it) kube-apiserver's
    webhook metrics, which tests/integration/test_monitoring.py finds on a real API server."""
    names = {s.name for s in m.selectors(query.expr)}
    assert names and all(n.startswith("homing_") or n.startswith(m.APISERVER_WEBHOOK) for n in names), names


def test_grafana_variables_are_all_filled():
    assert not any("$" in q.expr for q in QUERIES)


def test_a_parse_error_is_caught():
    with pytest.raises(ValueError):
        m.selectors("sum by (le (rate(x[5m]))")


@pytest.mark.parametrize("rule", [r for g in yaml.safe_load((m.MONITORING / "prometheusrule.yaml").read_text())["spec"]["groups"]
                                  for r in g["rules"]], ids=lambda r: r["alert"])
def test_alerts_say_how_bad_and_what(rule):
    assert rule["labels"]["severity"] in ("warning", "critical")
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    assert rule["for"].endswith("m")


def test_dashboard_panels_are_laid_out_apart():
    panels = m.dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [{(x, y) for x in range(p["gridPos"]["x"], p["gridPos"]["x"] + p["gridPos"]["w"])
              for y in range(p["gridPos"]["y"], p["gridPos"]["y"] + p["gridPos"]["h"])} for p in panels]
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)
    assert not any(a & b for a, b in itertools.combinations(cells, 2))


def test_kustomization_lists_what_is_there():
    k = yaml.safe_load((m.MONITORING / "kustomization.yaml").read_text())
    files = k["resources"] + [f for g in k["configMapGenerator"] for f in g["files"]]
    assert all((m.MONITORING / f).is_file() for f in files)


def test_metric_families_of_sample_names():
    fams = {"homing_webhook_duration_seconds", "homing_ready"}
    assert m.family("homing_webhook_duration_seconds_bucket", fams) == "homing_webhook_duration_seconds"
    assert m.family("homing_ready", fams) == "homing_ready"
    assert m.family("homing_ready_count", fams) == "homing_ready"
    assert m.family("homing_other_count", fams) == "homing_other_count"


def test_parse_metrics_page():
    types, samples = m.parse_metrics('# TYPE a_total counter\na_total{x="1",y="q\\"z"} 3.0\nb 1e3\n')
    assert types == {"a_total": "counter"}
    assert samples == [m.Sample("a_total", (("x", "1"), ("y", 'q\\"z')), 3.0), m.Sample("b", (), 1000.0)]
