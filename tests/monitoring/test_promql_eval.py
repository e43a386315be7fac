"""The dashboard picture's PromQL evaluator on hand-made samples, against values worked
out by hand."""
from __future__ import annotations

import math

import pytest

from homing_e2e.monitoring import Sample
from homing_e2e.promql_eval import Evaluator, Series


def s(name: str, value: float, **labels: str) -> Sample:
    return Sample(name, tuple(sorted(labels.items())), value)


@pytest.fixture
def ev() -> Evaluator:
    series = Series()
    # two namespaces' placements, scraped every 10 s for a minute
    for i in range(7):
        t = 1000.0 + 10 * i
        series.add(t, [
            s("p_total", 3 * i, outcome="home", ns="a"), s("p_total", i, outcome="elsewhere", ns="a"),
            s("p_total", 2 * i, outcome="home", ns="b"),
            s("lat_bucket", 10 * i, le="0.1"), s("lat_bucket", 20 * i, le="1.0"), s("lat_bucket", 20 * i, le="+Inf"),
            s("g", 5 - i if i < 3 else 99, r="x"),
        ])
    return Evaluator(series)


T = 1060.0


@pytest.mark.parametrize(
    "expr, want",
    [
        ('sum(rate(p_total[1m]))', {(): 0.6}),
        ('sum by (ns) (rate(p_total{outcome="home"}[1m])) / sum by (ns) (rate(p_total[1m]))',
         {(("ns", "a"),): 0.75, (("ns", "b"),): 1.0}),
        ('sum by (outcome) (increase(p_total{ns=~"a|b"}[1m]))', {(("outcome", "home"),): 25.0, (("outcome", "elsewhere"),): 5.0}),
        ('sum(rate(p_total{ns!="a"}[1m]))', {(): 0.2}),
        ("histogram_quantile(0.5, sum by (le) (rate(lat_bucket[1m])))", {(): 0.1}),
        ("histogram_quantile(0.75, sum by (le) (rate(lat_bucket[1m])))", {(): 0.55}),
        ("max by (r) (g)", {(("r", "x"),): 99.0}),
        ("max(g) > 50", {(): 99.0}),
        ("max(g) > 500", {}),
        ('sum(rate(p_total[1m])) > 0 and sum(rate(p_total[1m])) < 1', {(): 0.6}),
        ("absent(nothing)", {(): 1.0}),
    ],
)
def test_evaluates(ev, expr, want):
    got = ev.at(expr, T)
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k]) for k in want)


def test_counter_reset_counts_what_came_after(ev):
    series = Series()
    for t, v in [(0, 5.0), (10, 8.0), (20, 2.0), (30, 4.0)]:
        series.add(float(t), [s("c_total", v)])
    assert Evaluator(series).at("increase(c_total[40s])", 30.0) == {(): 3 + 2 + 2}


def test_nothing_in_the_window_is_no_series(ev):
    assert ev.at("rate(p_total[1m])", 5000.0) == {}
