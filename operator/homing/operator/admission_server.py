"""kopf's webhook server (TLS, certificate reloads, the aiohttp app), with homing's one
admission answered directly: the review is read once and the decision's JSON patch is
sent as it is (behaviour.md "Operation", never stall). kopf's own path deep-copies the pod for its diff,
its patch and its handler's body, then diffs the whole pod to rebuild the same patch:
bench/scale.py measured that at about four fifths of the webhook's time on the loop."""
from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import aiohttp.web
import kopf
import orjson

from homing.engine.admission import Decision
from homing.operator import logs

log = logs.get("homing.admission")

WEBHOOK_ID = "homing-pods"  # the kopf handler's id: the last part of the webhook's path

Admit = Callable[[dict, bool], tuple[Decision, list[dict]]]


def review_response(review: dict, admit: Admit) -> dict[str, Any]:
    """The AdmissionReview answer: always allowed; the patch and warnings when there are any."""
    request = review.get("request") or {}
    answer: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    try:
        decision, ops = admit(request.get("object") or {}, bool(request.get("dryRun")))
        if ops:
            answer["patchType"] = "JSONPatch"
            answer["patch"] = base64.b64encode(orjson.dumps(ops)).decode()
        if decision.warnings:
            answer["warnings"] = [str(w) for w in decision.warnings]
    except Exception:  # the admitter never raises; should it, the pod goes in unchanged
        log.exception("admission failed; pod admitted unchanged")
        answer = {"uid": request.get("uid", ""), "allowed": True}
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": review.get("kind", "AdmissionReview"),
            "response": answer}


class AdmissionServer(kopf.WebhookServer):
    """Set `admit` once the runtime exists; until then (and for any other webhook) kopf serves."""

    admit: Admit | None = None

    async def _serve(self, fn: Any, request: aiohttp.web.Request) -> aiohttp.web.Response:  # type: ignore[override]
        admit = self.admit
        if admit is None or request.match_info.get("id") != WEBHOOK_ID:
            return await kopf.WebhookServer._serve(fn, request)
        try:
            review = orjson.loads(await request.read())
        except ValueError as err:  # orjson.JSONDecodeError is one
            raise aiohttp.web.HTTPBadRequest(reason=str(err) or None)
        if not isinstance(review, dict):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview")
        return aiohttp.web.Response(body=orjson.dumps(review_response(review, admit)), content_type="application/json")
