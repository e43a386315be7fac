"""Every metric that manifests/monitoring's dashboard and alerts read exists in the
/metrics of the operator running against the local control plane, with the labels the
queries filter and group by, once the operator has admitted and placed pods."""
from __future__ import annotations

import pytest

from homing.kube.client import KubeError
from homing_e2e import monitoring as m, objects as o
from homing_e2e.webhook_ready import webhook_answers

pytestmark = pytest.mark.cluster

HISTOGRAM_LABELS = {"le"}  # a bucket's label, on _bucket samples only


async def _placements(kube, ns: str) -> None:
    """One pod back home and one placed away: homing_placements_total gets both outcomes."""
    a, b, owner, ann = await o.rank_ran_on_a(kube, ns)
    await o.delete_pod(kube, ns, "job-0")
    await o.pod(kube, ns, "job-0", owner=owner, annotations=ann)
    await o.bind(kube, ns, "job-0", a)
    away = {"volcano.sh/task-index": "1"}
    await o.pod(kube, ns, "job-1", owner=owner, annotations=away)
    await o.bind(kube, ns, "job-1", b)
    await o.running(kube, ns, "job-1")
    await o.delete_pod(kube, ns, "job-1")
    await o.pod(kube, ns, "job-1", owner=owner, annotations=away)
    await o.bind(kube, ns, "job-1", a)


async def test_dashboard_and_alerts_read_metrics_the_operator_serves(kube, operator, ns):
    await webhook_answers(kube, ns)
    await _placements(kube, ns)

    async def scraped() -> tuple | None:
        types, samples = m.parse_metrics(operator.metrics())
        # both placements counted: the second bind's metric may land a scrape after the first's
        seen = {dict(s.labels).get("outcome") for s in samples
                if s.name == "homing_placements_total" and dict(s.labels).get("workload_namespace") == ns}
        return (types, samples) if {"home", "elsewhere"} <= seen else None

    types, samples = await o.eventually(scraped, what=f"placements in {ns} on /metrics")
    labels_of: dict[str, set[str]] = {}
    for s in samples:
        labels_of.setdefault(m.family(s.name, set(types)), set()).update(k for k, _ in s.labels)
    missing, unlabelled = [], []
    for q in m.dashboard_queries() + m.rule_queries():
        grouped = m.grouping_labels(q.expr) - HISTOGRAM_LABELS
        for sel in m.selectors(q.expr):
            if sel.name.startswith(m.APISERVER_WEBHOOK):
                continue  # the API server's, below
            fam = m.family(sel.name, set(types))
            if fam not in types:
                missing.append(f"{q.where}: {sel.name}")
                continue
            wanted = {x.name for x in sel.matchers.matchers} | grouped
            if fam in labels_of and not wanted <= labels_of[fam]:
                unlabelled.append(f"{q.where}: {sel.name} has no {sorted(wanted - labels_of[fam])}")
    assert not missing, f"not on /metrics: {missing}"
    assert not unlabelled, unlabelled
    # The placements that made this test's samples carry their outcome and reason.
    mine = [dict(s.labels) for s in samples if s.name == "homing_placements_total" and dict(s.labels)["workload_namespace"] == ns]
    assert {(x["outcome"], x["workload_kind"]) for x in mine} >= {("home", "ConfigMap"), ("elsewhere", "ConfigMap")}


async def test_the_operator_answers_each_review_in_the_loop_turn_it_reads_it(kube, operator, ns):
    """kopf's admission function with homing's handler never waits on the real operator, so
    every review is answered in the callback that read it (admission_server.py); a kopf that
    began to wait there would put the loop's turns back into every pod's creation."""
    def answers() -> dict[str, float]:
        _, samples = m.parse_metrics(operator.metrics())
        return {dict(s.labels)["when"]: s.value for s in samples if s.name == "homing_admission_answers_total"}

    before = answers()
    await webhook_answers(kube, ns)
    await _placements(kube, ns)
    after = answers()
    assert after.get("at-arrival", 0) - before.get("at-arrival", 0) >= 4  # the placements' four pods at least
    assert after.get("after-a-wait", 0) == before.get("after-a-wait", 0), after


async def _apiserver_metrics(kube) -> str:
    resp = await kube.api.call_api("/metrics", "GET", header_params={"Accept": "text/plain"},
                                   auth_settings=["BearerToken"], _preload_content=False)
    return (await resp.read()).decode()


async def test_the_alerts_on_the_webhook_read_what_the_api_server_serves(kube, operator, ns):
    """The alerts on the API server's view of homing's webhook (a call failing open, a rejection,
    the call's latency) read kube-apiserver's own metrics: after a call that succeeds and one that
    fails open, for an entry named as homing's are, each selector's family is on the real API
    server's /metrics with the labels the alert filters by. The failing entry is a throwaway
    configuration pointing at a closed port, for this test's namespace only."""
    name = f"homing-probe-{o.short_id()}"
    label = f"probe-{o.short_id()}.homing.io/enabled"
    entry = {
        "name": "probe.pods.homing.io", "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
        "timeoutSeconds": 1, "clientConfig": {"url": "https://127.0.0.1:1/nothing"},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}],
        "namespaceSelector": {"matchLabels": {label: "true"}},
    }
    # a rejection is counted only where a call fails under failurePolicy Fail: a second entry does that
    refusing = {**entry, "name": "refusing.pods.homing.io", "failurePolicy": "Fail"}
    api = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    await kube.request("POST", api, body={"metadata": {"name": name}, "webhooks": [entry, refusing]})
    try:
        probe_ns = await o.namespace(kube, f"t-{o.short_id()}")
        await kube.request("PATCH", f"/api/v1/namespaces/{probe_ns}", body={"metadata": {"labels": {label: "true"}}},
                           content_type="application/merge-patch+json")
        await webhook_answers(kube, ns)  # a call homing answers

        async def failed_open() -> str | None:
            try:
                await o.pod(kube, probe_ns, f"p-{o.short_id()}", npus=0)
            except KubeError as refused:  # the refusing entry's work
                assert refused.status >= 400
            text = await _apiserver_metrics(kube)
            counted = ('apiserver_admission_webhook_fail_open_count{name="probe.pods.homing.io"' in text
                       and 'name="refusing.pods.homing.io"' in text.split("apiserver_admission_webhook_rejection_count", 1)[-1])
            return text if counted else None

        text = await o.eventually(failed_open, timeout=30, what="a call failing open on the API server's /metrics")
    finally:
        await kube.request("DELETE", f"{api}/{name}")
    types, samples = m.parse_metrics(text)
    labels_of: dict[str, set[str]] = {}
    for sample in samples:
        labels_of.setdefault(m.family(sample.name, set(types)), set()).update(k for k, _ in sample.labels)
    problems = []
    for q in m.rule_queries():
        for sel in m.selectors(q.expr):
            if not sel.name.startswith(m.APISERVER_WEBHOOK):
                continue
            fam = m.family(sel.name, set(types))
            wanted = {x.name for x in sel.matchers.matchers} | (m.grouping_labels(q.expr) - HISTOGRAM_LABELS)
            if fam not in labels_of:
                problems.append(f"{q.where}: {sel.name} not on the API server's /metrics")
            elif not wanted <= labels_of[fam]:
                problems.append(f"{q.where}: {sel.name} has no {sorted(wanted - labels_of[fam])}")
    assert not problems, problems
