"""behaviour.md "Operation", never stall: homing's admission is answered straight from the decision's
JSON patch, without kopf's per-request machinery (which deep-copied the pod three
times and diffed it whole: bench/scale.py found it most of the webhook's time). The
answer is the same one kopf would give: allowed, the patch, the warnings."""
from __future__ import annotations

import base64
import copy
import json

import jsonpatch
import pytest

from homing.operator.admission_server import WEBHOOK_ID, AdmissionServer, review_response

from .test_admitter import admitter, rank0


class Request:
    """What the server reads of aiohttp's request."""

    def __init__(self, review: dict, webhook: str = WEBHOOK_ID) -> None:
        self.match_info = {"id": webhook}
        self._text = json.dumps(review)
        self.headers: dict = {}
        self.transport = None

    async def text(self) -> str:
        return self._text

    async def read(self) -> bytes:
        return self._text.encode()


def review(pod: dict, dry_run: bool = False) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "req-1", "operation": "CREATE", "object": pod, "dryRun": dry_run, "userInfo": {}}}


def server() -> AdmissionServer:
    s = AdmissionServer(port=0)
    s.admit = admitter().admit
    return s


async def never(*_: object, **__: object) -> dict:
    raise AssertionError("kopf's per-request path was taken")


async def test_the_pod_is_sent_home_by_the_decisions_own_patch(monkeypatch):
    copies = []
    real = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: copies.append(1) or real(*a, **k))
    resp = await server()._serve(never, Request(review(rank0())))
    assert not copies  # no copy of the pod on the loop that serves admissions
    answer = json.loads(resp.text)["response"]
    assert answer["uid"] == "req-1" and answer["allowed"] is True and answer["patchType"] == "JSONPatch"
    patched = jsonpatch.apply_patch(rank0(), json.loads(base64.b64decode(answer["patch"])))
    (term,) = patched["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][:1]
    assert term["preference"]["matchExpressions"][0]["values"] == ["n1"]


async def test_other_webhooks_and_an_unset_admitter_go_through_kopf():
    seen = []

    async def kopf_path(data: dict, **_: object) -> dict:
        seen.append(data["request"]["uid"])
        return {"response": {"uid": data["request"]["uid"], "allowed": True}}

    await server()._serve(kopf_path, Request(review(rank0()), webhook="something-else"))
    await AdmissionServer(port=0)._serve(kopf_path, Request(review(rank0())))
    assert seen == ["req-1", "req-1"]


def test_an_admitter_that_raises_admits_the_pod_unchanged():
    def broken(pod: dict, dryrun: bool):
        raise RuntimeError("bug")

    answer = review_response(review(rank0()), broken)["response"]
    assert answer == {"uid": "req-1", "allowed": True}


async def test_a_review_that_is_not_json_is_a_bad_request():
    import aiohttp.web

    request = Request({})
    request._text = "{not json"
    with pytest.raises(aiohttp.web.HTTPBadRequest):
        await server()._serve(never, request)
