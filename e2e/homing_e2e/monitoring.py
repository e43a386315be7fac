"""The queries of manifests/monitoring (dashboard panels, alert rules), parsed with a
real PromQL parser, and the samples of a /metrics page: what the monitoring test
compares and the dashboard picture evaluates."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import promql_parser
import yaml

MONITORING = Path(__file__).resolve().parents[2] / "manifests" / "monitoring"
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
# Grafana's variables, as a Prometheus would see them once Grafana filled them in.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "1h", "$namespace": ".*"}


@dataclass(frozen=True)
class Query:
    where: str  # "panel <title>" or "alert <name>"
    expr: str  # as Prometheus receives it
    legend: str = ""


def filled(expr: str, variables: dict[str, str] | None = None) -> str:
    out = expr
    for name, value in sorted({**GRAFANA_VARIABLES, **(variables or {})}.items(), key=lambda kv: -len(kv[0])):
        out = out.replace(name, value)
    return out


def dashboard(path: Path = MONITORING / "homing-dashboard.json") -> dict:
    return json.loads(path.read_text())


def dashboard_queries(board: dict | None = None, variables: dict[str, str] | None = None) -> list[Query]:
    board = board or dashboard()
    queries = [Query(f"panel {p['title']}", filled(t["expr"], variables), t.get("legendFormat", ""))
               for p in board["panels"] for t in p.get("targets", ())]
    for var in board.get("templating", {}).get("list", ()):
        if var.get("type") == "query":  # label_values(metric, label) is Grafana's, not PromQL
            found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["query"]["query"])
            queries.append(Query(f"variable {var['name']}", f"group by ({found[2]}) ({found[1]})"))
    return queries


APISERVER_WEBHOOK = "apiserver_admission_webhook_"  # the API server's metrics of its webhook calls


def rule_queries(path: Path = MONITORING / "prometheusrule.yaml") -> list[Query]:
    rule = yaml.safe_load(path.read_text())
    return [Query(f"alert {r['alert']}", r["expr"]) for g in rule["spec"]["groups"] for r in g["rules"]]


def _children(node) -> list:
    for attr in ("expr", "lhs", "rhs", "vector_selector", "param"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, (str, int, float)):
            yield child
    yield from getattr(node, "args", None) or ()


def selectors(expr: str) -> list[promql_parser.VectorSelector]:
    """Every series selector of the expression (the parser raises on bad syntax)."""
    found, todo = [], [promql_parser.parse(expr)]
    while todo:
        node = todo.pop()
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)
        todo.extend(_children(node))
    return found


def grouping_labels(expr: str) -> set[str]:
    """Labels named in `by (...)` clauses."""
    out, todo = set(), [promql_parser.parse(expr)]
    while todo:
        node = todo.pop()
        modifier = getattr(node, "modifier", None)
        if isinstance(node, promql_parser.AggregateExpr) and modifier is not None:
            if modifier.type == promql_parser.AggModifierType.By:
                out.update(modifier.labels)
        todo.extend(_children(node))
    return out


def family(name: str, families: set[str]) -> str:
    """The metric family a sample name belongs to: homing_x_bucket is homing_x's."""
    for suffix in HISTOGRAM_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            return name[: -len(suffix)]
    return name


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


_SAMPLE = re.compile(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> tuple[dict[str, str], list[Sample]]:
    """A Prometheus text page: {family: type} from # TYPE lines, and the samples."""
    types: dict[str, str] = {}
    samples: list[Sample] = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = _SAMPLE.match(line)
            if m:
                labels = tuple(sorted(_LABEL.findall(m[2] or "")))
                samples.append(Sample(m[1], labels, float(m[3])))
    return types, samples
