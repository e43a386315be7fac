"""bench/noop_webhook.py --patch: the floor of a webhook that mutates answers every pod with a
patch the API server can apply, of homing's shape, that changes no placement."""
from __future__ import annotations

import jsonpatch
import pytest


@pytest.fixture(scope="module")
def webhook(bench_script):
    return bench_script("noop_webhook")


TERM_ELSEWHERE = {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}


@pytest.mark.parametrize(("metadata", "spec"), [
    ({"name": "p"}, {"containers": []}),
    ({"name": "p", "annotations": {"x": "1"}}, {"containers": []}),
    ({"name": "p"}, {"affinity": {"podAntiAffinity": {}}}),
    ({"name": "p"}, {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}),
    ({"name": "p"}, {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [TERM_ELSEWHERE]}}}),
])
def test_the_patch_applies_to_any_pod_and_prefers_only_a_node_that_does_not_exist(webhook, metadata, spec) -> None:
    pod = {"metadata": metadata, "spec": spec}
    out = jsonpatch.apply_patch(pod, webhook.patch_for(pod))
    assert out["metadata"]["annotations"][webhook.ANNOTATION] == "floor"
    assert {k: v for k, v in out["metadata"]["annotations"].items() if k != webhook.ANNOTATION} == metadata.get("annotations", {})
    terms = out["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert terms[-1] == webhook.TERM and terms[:-1] == spec.get("affinity", {}).get("nodeAffinity", {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution", [])
    assert webhook.TERM["preference"]["matchExpressions"][0]["values"] == [webhook.NO_NODE]


def test_without_patch_the_answer_is_allowed_unchanged(webhook) -> None:
    body = {"request": {"uid": "u", "object": {"metadata": {}, "spec": {}}}}
    assert webhook.answer(body, patch=False)["response"] == {"uid": "u", "allowed": True}
    assert webhook.answer(body, patch=True)["response"]["patchType"] == "JSONPatch"
