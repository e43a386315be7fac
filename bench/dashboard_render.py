"""Draws manifests/monitoring/homing-dashboard.json as a picture: each panel's queries
evaluated (e2e/homing_e2e/promql_eval.py) over /metrics samples scraped during a run
(bench/dashboard_snapshot.py), laid out on the dashboard's own grid. Needs matplotlib
(the `dashboard` extra). It is our drawing of the dashboard's queries, not Grafana's."""
from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.gridspec import GridSpec  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from homing_e2e.monitoring import Sample, dashboard, filled  # noqa: E402
from homing_e2e.promql_eval import Evaluator, Series  # noqa: E402

BG, PANEL, TEXT, GRID = "#111217", "#181b1f", "#ccccdc", "#2c3235"
COLORS = ["#73bf69", "#f2cc0c", "#5794f2", "#ff9830", "#f2495c", "#b877d9", "#8ab8ff", "#96d98d", "#fade2a", "#ffb357"]
ROW_INCHES, WIDTH_INCHES = 0.5, 20.0
# Colours that mean the same in every panel: green home or healthy, red errors or faults.
MEANING = [("error", "#f2495c"), ("unhealthy", "#f2495c"), ("elsewhere: home-busy", "#ff9830"),
           ("elsewhere", "#fade2a"), ("domain", "#5794f2"), ("pool", "#8ab8ff"), ("none", "#8e8e8e"),
           ("skipped", "#5a5a5a"), ("sub-healthy", "#ff9830"), ("unavailable", "#fade2a"), ("home", "#73bf69"),
           ("healthy", "#73bf69")]


def colour(name: str, fallback: str) -> str:
    return next((c for word, c in MEANING if name.startswith(word)), fallback)


def unit_text(value: float, unit: str | None) -> str:
    if value is None or math.isnan(value):
        return "no data"
    if unit == "percentunit":
        return f"{value:.0%}"
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.1f} s"
    if unit == "ops":
        return f"{value:.2f}/s"
    return f"{value:.0f}" if abs(value) >= 10 or float(value).is_integer() else f"{value:.2f}"


def legend(template: str, labels: tuple) -> str:
    found = dict(labels)
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: found.get(m[1], ""), template) or "value"


COUNTING = ("_total", "_bucket", "_count", "_sum")


def _series(data: dict) -> Series:
    """The scrapes as series. A labelled counter is exported from its first increment on:
    it is counted from 0 at the scrape before it appeared, as if it had been there at 0
    (else increase() would miss the increments that made it appear)."""
    series = Series()
    seen: set[tuple] = set()
    before = None
    for scrape in data["scrapes"]:
        samples = [Sample(n, tuple(tuple(kv) for kv in labels), v) for n, labels, v in scrape["samples"]]
        born = [s for s in samples if (s.name, s.labels) not in seen and s.name.endswith(COUNTING)]
        if before is not None and born:
            series.add(before, [Sample(s.name, s.labels, 0.0) for s in born])
        seen.update((s.name, s.labels) for s in samples)
        series.add(scrape["t"], samples)
        before = scrape["t"]
    return series


def _evaluate(ev: Evaluator, expr: str, times: list[float]) -> dict[tuple, list[float]]:
    lines: dict[tuple, list[float]] = {}
    for i, t in enumerate(times):
        got = ev.at(expr, t)
        got = {(): got} if isinstance(got, float) else got
        for labels, value in got.items():
            lines.setdefault(labels, [math.nan] * len(times))[i] = value
    return lines


def _style(ax, title: str) -> None:
    ax.set_facecolor(PANEL)
    ax.set_title(title, loc="left", color=TEXT, fontsize=10, fontweight="bold")
    for spine in ax.spines.values():
        spine.set_color(GRID)
    ax.tick_params(colors=TEXT, labelsize=7)


def _stat(ax, panel: dict, ev: Evaluator, at: float, variables: dict) -> None:
    unit = panel["fieldConfig"]["defaults"].get("unit")
    target = panel["targets"][0]
    got = ev.at(filled(target["expr"], variables), at)
    value = got if isinstance(got, float) else next(iter(got.values()), math.nan)
    steps = panel["fieldConfig"]["defaults"].get("thresholds", {}).get("steps", [])
    color = COLORS[0]
    for step in steps:
        if step["value"] is None or (not math.isnan(value) and value >= step["value"]):
            color = {"red": "#f2495c", "orange": "#ff9830", "green": "#73bf69"}.get(step["color"], step["color"])
    ax.text(0.5, 0.45, unit_text(value, unit), color=color, fontsize=28, fontweight="bold", ha="center", va="center",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _timeseries(ax, panel: dict, ev: Evaluator, times: list[float], start: float, variables: dict, marks: list[float]) -> None:
    unit = panel["fieldConfig"]["defaults"].get("unit")
    stacked = "stacking" in panel["fieldConfig"]["defaults"].get("custom", {})
    x = [(t - start) / 60 for t in times]
    named: list[tuple[str, list[float]]] = []
    for target in panel["targets"]:
        for labels, values in sorted(_evaluate(ev, filled(target["expr"], variables), times).items()):
            named.append((legend(target.get("legendFormat", ""), labels), values))
    colors = [colour(name, COLORS[i % len(COLORS)]) for i, (name, _) in enumerate(named)]
    if stacked and named:
        ax.stackplot(x, *[[0 if math.isnan(v) else v for v in vals] for _, vals in named],
                     labels=[n for n, _ in named], colors=colors[: len(named)], alpha=0.75)
    else:
        for (name, values), color in zip(named, colors):
            ax.plot(x, values, label=name, color=color, linewidth=1.4)
    for m in marks:
        ax.axvline((m - start) / 60, color="#6e7079", linewidth=0.6, linestyle=":")
    if unit == "percentunit":
        ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: unit_text(v, unit)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{int(v)}:{int(round(v % 1 * 60)):02d}"))
    ax.grid(color=GRID, linewidth=0.5)
    if named:
        ax.legend(loc="upper left", fontsize=6.5, facecolor=PANEL, edgecolor=GRID, labelcolor=TEXT, ncol=2, framealpha=0.8)
    else:
        ax.text(0.5, 0.5, "no data", color=TEXT, ha="center", va="center", transform=ax.transAxes)


def render(data: dict, out: Path, board: dict | None = None) -> None:
    board = board or dashboard()
    series = _series(data)
    ev = Evaluator(series)
    first, last = data["scrapes"][0]["t"], data["scrapes"][-1]["t"]
    every = data["scrape_every"]
    window = max(30, int(4 * every))
    variables = {"$__rate_interval": f"{window}s", "$__range": f"{int(last - first) + 1}s"}
    times = [first + window + i * every for i in range(int((last - first - window) / every) + 1)]
    marks = [r["t"] for r in data["rounds"]]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in board["panels"])
    fig = plt.figure(figsize=(WIDTH_INCHES, rows * ROW_INCHES + 1.6), facecolor=BG)
    grid = GridSpec(rows, 24, figure=fig, left=0.04, right=0.99, top=1 - 0.9 / (rows * ROW_INCHES + 1.6),
                    bottom=0.7 / (rows * ROW_INCHES + 1.6), hspace=4.5, wspace=1.2)
    for panel in board["panels"]:
        g = panel["gridPos"]
        ax = fig.add_subplot(grid[g["y"]: g["y"] + g["h"], g["x"]: g["x"] + g["w"]])
        _style(ax, panel["title"])
        if panel["type"] == "stat":
            _stat(ax, panel, ev, last, variables)
        else:
            _timeseries(ax, panel, ev, times, first, variables, marks)
    fig.suptitle(f"{board['title']} dashboard — {(last - first) / 60:.0f} minutes of a real run on the local control plane",
                 color=TEXT, fontsize=14, x=0.04, ha="left")
    steps = "; ".join(f"{i}. {r['what']}" for i, r in enumerate(data["rounds"], 1))
    fig.text(0.04, 0.25 / (rows * ROW_INCHES + 1.6),
             "Drawn by bench/dashboard_snapshot.py from the dashboard's PromQL over the operator's /metrics, scraped every "
             f"{every:g} s (not a Grafana screenshot). Dotted lines, in order: {steps}",
             color="#9fa1a8", fontsize=7.5, wrap=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80, facecolor=BG)
    plt.close(fig)
