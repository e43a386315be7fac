"""What bench/scale.py reads off the running system: Prometheus histograms (the API
server's and the operator's), quantiles of what changed between two scrapes, etcd's
stored bytes, and the operator's resident memory."""
from __future__ import annotations

import base64
import json
import os
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator

from prometheus_client.parser import text_string_to_metric_families

from homing.kube.client import Kube

Buckets = dict[float, float]  # upper bound -> cumulative count


def _bucket_samples(text: str, family: str) -> Iterator[tuple[dict[str, str], float, float]]:
    """(labels, upper bound, cumulative count) of each bucket sample of one histogram."""
    for fam in text_string_to_metric_families(text):
        if fam.name == family:
            for sample in fam.samples:
                if sample.name.endswith("_bucket"):
                    yield sample.labels, float(sample.labels["le"]), sample.value


def buckets(text: str, family: str, where: Callable[[dict[str, str]], bool] = lambda _: True) -> Buckets:
    """One histogram's cumulative buckets, summed over the series `where` accepts."""
    out: Buckets = defaultdict(float)
    for labels, le, value in _bucket_samples(text, family):
        if where(labels):
            out[le] += value
    return dict(out)


def buckets_by(text: str, family: str, label: str) -> dict[str, Buckets]:
    """One histogram's cumulative buckets for each value of one label, summed over the others."""
    out: dict[str, Buckets] = defaultdict(lambda: defaultdict(float))
    for labels, le, value in _bucket_samples(text, family):
        out[labels.get(label, "")][le] += value
    return {value: dict(b) for value, b in out.items()}


def counters(text: str, family: str, label: str) -> dict[str, float]:
    """One counter's values by one label, summed over the others."""
    out: dict[str, float] = defaultdict(float)
    for fam in text_string_to_metric_families(text):
        if fam.name != family:  # the parser drops a counter's `_total` from the family name
            continue
        for sample in fam.samples:
            if sample.name.endswith("_total"):
                out[sample.labels.get(label, "")] += sample.value
    return dict(out)


def delta(after: Buckets, before: Buckets) -> Buckets:
    return {le: count - before.get(le, 0.0) for le, count in after.items()}


def quantile(cumulative: Buckets, q: float) -> float | None:
    """Like PromQL's histogram_quantile: linear inside the bucket that holds the rank;
    None without observations. Past the last finite bound: that bound."""
    bounds = sorted(cumulative)
    total = cumulative.get(float("inf"), cumulative[bounds[-1]] if bounds else 0.0)
    if not bounds or total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for le in bounds:
        count = cumulative[le]
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * ((rank - below) / (count - below) if count > below else 1.0)
        lower, below = le, count
    return lower


def highest(cumulative: Buckets) -> float | None:
    """The upper bound of the highest bucket with an observation in it (past the last
    finite bound: that bound)."""
    seen, below = None, 0.0
    for le in sorted(cumulative):
        if cumulative[le] > below:
            seen = le
        below = cumulative[le]
    if seen == float("inf"):
        return max((le for le in cumulative if le != float("inf")), default=None)
    return seen


def count(cumulative: Buckets) -> float:
    return cumulative.get(float("inf"), 0.0)


def share_within(cumulative: Buckets, bound: float) -> float | None:
    """Fraction of observations at or under `bound` (a bucket bound)."""
    total = count(cumulative)
    return None if total <= 0 else cumulative.get(bound, 0.0) / total


async def apiserver_metrics(kube: Kube) -> str:
    resp = await kube.api.call_api("/metrics", "GET", header_params={"Accept": "text/plain"},
                                   auth_settings=["BearerToken"], _preload_content=False, _request_timeout=60)
    return (await resp.read()).decode()


APISERVER_WEBHOOK_SECONDS = "apiserver_admission_webhook_admission_duration_seconds"


def homing_webhook(labels: dict[str, str]) -> bool:
    return labels.get("name", "").endswith("pods.homing.io") and labels.get("type") == "admit"


def etcd_objects(etcd_url: str, prefix: str) -> list[tuple[str, int]]:
    """(key, stored bytes) of every key under `prefix`, read from etcd's JSON gateway a
    page at a time: what the API server really stored, metadata and managedFields included."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    start, out = prefix, []
    while True:
        query = {"key": _b64(start), "range_end": _b64(end), "limit": 100}
        req = urllib.request.Request(f"{etcd_url}/v3/kv/range", data=json.dumps(query).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            page = json.load(resp)
        kvs = page.get("kvs") or []
        for kv in kvs:
            out.append((base64.b64decode(kv["key"]).decode(), len(base64.b64decode(kv.get("value", "")))))
        if not page.get("more") or not kvs:
            return out
        start = out[-1][0] + "\x00"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) in MiB, from /proc."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return _kib(fields.get("VmRSS")) / 1024, _kib(fields.get("VmHWM")) / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used: its cost, whatever else shares the machine."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kib(value: str | None) -> float:
    return float(value.split()[0]) if value else 0.0
