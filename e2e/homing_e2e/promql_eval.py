"""Evaluates the PromQL the dashboard uses over samples scraped from /metrics, for the
dashboard picture (bench/dashboard_snapshot.py): selectors, rate/increase,
sum/max/min/avg/count by, histogram_quantile, arithmetic and comparison between
vectors and scalars. Not Prometheus: no staleness markers, offsets or @, and no
extrapolation to the window's edges: increase is what the samples inside the window
rose by, rate that over the time between the first and the last of them."""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

import promql_parser as P

Labels = tuple[tuple[str, str], ...]
Vector = dict[Labels, float]
LOOKBACK = 300.0  # seconds an instant selector looks back, as Prometheus does


class Series:
    """Scraped samples: (metric name, labels) -> [(time, value)], in time order."""

    def __init__(self) -> None:
        self.points: dict[tuple[str, Labels], list[tuple[float, float]]] = defaultdict(list)

    def add(self, t: float, samples: Iterable) -> None:
        for s in samples:
            self.points[(s.name, s.labels)].append((t, s.value))

    def select(self, sel: P.VectorSelector) -> Iterable[tuple[Labels, list[tuple[float, float]]]]:
        for (name, labels), points in self.points.items():
            if name == sel.name and all(_matches(m, dict(labels).get(m.name, "")) for m in sel.matchers.matchers):
                yield labels, points


def _matches(m: P.Matcher, value: str) -> bool:
    op = str(m.op)
    if op.endswith("NotEqual"):
        return value != m.value
    if op.endswith("Equal"):
        return value == m.value
    hit = re.fullmatch(m.value, value) is not None
    return not hit if op.endswith("NotRe") else hit


def _window(points: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    return [(t, v) for t, v in points if start < t <= end]


def _increase(points: list[tuple[float, float]]) -> float:
    total = 0.0
    for (_, a), (_, b) in zip(points, points[1:]):
        total += b - a if b >= a else b  # a counter that went down was reset
    return total


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    buckets = sorted(buckets)
    if len(buckets) < 2 or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            return lower_bound + (bound - lower_bound) * ((rank - lower_count) / (count - lower_count or 1))
        lower_bound, lower_count = bound, count
    return lower_bound


def _strip(labels: Labels, keep: list[str] | None, drop: tuple[str, ...] = ()) -> Labels:
    return tuple((k, v) for k, v in labels if (keep is None or k in keep) and k not in drop)


_AGG = {"sum": sum, "max": max, "min": min, "count": len, "avg": lambda xs: sum(xs) / len(xs), "group": lambda xs: 1.0}
_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a / b if b else (math.nan if a == 0 else math.copysign(math.inf, a))}
_COMPARE = {">": lambda a, b: a > b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b,
            "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


class Evaluator:
    def __init__(self, series: Series) -> None:
        self.series = series

    def at(self, expr: str, t: float) -> Vector | float:
        return self._eval(P.parse(expr), t)

    def _eval(self, node, t: float):
        if isinstance(node, P.NumberLiteral):
            return float(node.val)
        if isinstance(node, P.ParenExpr):
            return self._eval(node.expr, t)
        if isinstance(node, P.VectorSelector):
            out = {}
            for labels, points in self.series.select(node):
                recent = _window(points, t - LOOKBACK, t)
                if recent:
                    out[labels] = recent[-1][1]
            return out
        if isinstance(node, P.Call):
            return self._call(node, t)
        if isinstance(node, P.AggregateExpr):
            return self._aggregate(node, t)
        if isinstance(node, P.BinaryExpr):
            return self._binary(node, t)
        raise ValueError(f"not supported here: {type(node).__name__}")

    def _call(self, node: P.Call, t: float):
        name = node.func.name
        if name in ("rate", "increase"):
            matrix = node.args[0]
            span = matrix.range.total_seconds()
            out = {}
            for labels, points in self.series.select(matrix.vector_selector):
                pts = _window(points, t - span, t)
                if len(pts) < 2 or pts[-1][0] == pts[0][0]:
                    continue
                rise = _increase(pts)
                out[labels] = rise / (pts[-1][0] - pts[0][0]) if name == "rate" else rise
            return out
        if name == "histogram_quantile":
            q, vector = self._eval(node.args[0], t), self._eval(node.args[1], t)
            groups: dict[Labels, list[tuple[float, float]]] = defaultdict(list)
            for labels, value in vector.items():
                le = dict(labels).get("le")
                if le is not None:
                    groups[_strip(labels, None, ("le",))].append((float(le), value))
            return {k: _quantile(q, b) for k, b in groups.items()}
        if name == "absent":
            return {} if self._eval(node.args[0], t) else {(): 1.0}
        raise ValueError(f"function not supported here: {name}")

    def _aggregate(self, node: P.AggregateExpr, t: float) -> Vector:
        vector = self._eval(node.expr, t)
        keep = list(node.modifier.labels) if node.modifier is not None else []
        groups: dict[Labels, list[float]] = defaultdict(list)
        for labels, value in vector.items():
            groups[_strip(labels, keep)].append(value)
        return {k: _AGG[str(node.op)](v) for k, v in groups.items()}

    def _binary(self, node: P.BinaryExpr, t: float):
        op = str(node.op)
        lhs, rhs = self._eval(node.lhs, t), self._eval(node.rhs, t)
        if op == "and":
            return {k: v for k, v in lhs.items() if k in rhs}
        if op == "or":
            return {**rhs, **lhs}
        fn = _ARITH.get(op) or _COMPARE[op]
        compare = op in _COMPARE

        def apply(a: float, b: float, keep: float):
            result = fn(a, b)
            return (keep if result else None) if compare else result

        if isinstance(lhs, float) and isinstance(rhs, float):
            return apply(lhs, rhs, lhs)
        if isinstance(rhs, float):
            pairs = {k: apply(v, rhs, v) for k, v in lhs.items()}
        elif isinstance(lhs, float):
            pairs = {k: apply(lhs, v, v) for k, v in rhs.items()}
        else:
            pairs = {k: apply(v, rhs[k], v) for k, v in lhs.items() if k in rhs}
        return {k: v for k, v in pairs.items() if v is not None}
