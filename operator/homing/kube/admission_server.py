"""homing's webhook server, run by kopf through its public server protocol
(`settings.admission.server`): kopf hands over the function that runs the registered
`@kopf.on.mutate` handler (handlers.py), and this server calls it for every review. What it
adds to kopf's own server: TLS from certstore's one SSLContext (certificates renewed in place,
no restart of the server), `Connection: close` on every answer while draining (drain.py), an
allowed, unchanged answer should anything fail (behaviour.md "Operation": the webhook never
rejects a pod), and each review timed with its waits on the loop, each connection counted.

The handler's JSON patch comes back to this server in a slot (`hand_back`), not through kopf's
`Patch`: kopf would rebuild it by deep-copying the pod and diffing the copy whole, most of kopf's
time on a review (docs/design.md, "The patch, handed back"). And kopf is handed the review without
the pod's managedFields, which it would copy too and nothing reads."""
from __future__ import annotations

import asyncio
import base64
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar

import aiohttp.web
import kopf
import orjson

from homing.kube import logs, metrics

log = logs.get("homing.admission")

WEBHOOK_ID = "homing-pods"  # the kopf handler's id: the last part of the webhook's path
MAX_REVIEW_BYTES = 8 * 1024 * 1024  # a pod with large annotations still fits; aiohttp's default is 1 MiB


# The review being answered: the JSON patch its handler handed back. Set by the server around
# kopf's function, which awaits the handler in the same task; unset anywhere else.
_PATCH_SLOT: ContextVar[list[dict] | None] = ContextVar("homing_patch_slot", default=None)


def hand_back(ops: list[dict]) -> bool:
    """Gives the review's JSON patch to the server answering it; False when no homing server
    is answering (kopf's own, a test's), and the caller then uses kopf's `Patch`."""
    slot = _PATCH_SLOT.get()
    if slot is None:
        return False
    slot.extend(ops)
    return True


def with_patch(answer: dict, ops: list[dict]) -> dict:
    """kopf's answer, carrying the handed-back patch after any of kopf's own; a refusal carries none."""
    response = answer.get("response")
    if not ops or not isinstance(response, dict) or not response.get("allowed"):
        return answer
    if response.get("patch"):
        ops = [*orjson.loads(base64.b64decode(response["patch"])), *ops]
    response["patch"], response["patchType"] = base64.b64encode(orjson.dumps(ops)).decode("ascii"), "JSONPatch"
    return answer


def without_managed_fields(review: dict) -> dict:
    """The review with its objects' managedFields dropped, in place: the apiserver's bookkeeping
    of who set which field, often a third of a pod's bytes, never read by homing."""
    request = review.get("request")
    if isinstance(request, dict):
        for key in ("object", "oldObject"):
            obj = request.get(key)
            meta = obj.get("metadata") if isinstance(obj, dict) else None
            if isinstance(meta, dict):
                meta.pop("managedFields", None)
    return review


def allowed_unchanged(review: dict) -> dict:
    request = review.get("request") or {}
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": review.get("kind", "AdmissionReview"),
            "response": {"uid": request.get("uid", ""), "allowed": True}}


async def answer_review(fn: kopf.WebhookFn, review: dict, **context: object) -> dict:
    """kopf's answer to one review, with the handed-back patch; an allowed, unchanged one should kopf fail."""
    slot: list[dict] = []
    token = _PATCH_SLOT.set(slot)
    try:
        return with_patch(await fn(without_managed_fields(review), **context), slot)
    except Exception:  # kopf refused the review (an unknown resource, say): the pod goes in unchanged
        log.exception("admission failed; pod admitted unchanged")
        return allowed_unchanged(review)
    finally:
        _PATCH_SLOT.reset(token)


class AdmissionServer:
    def __init__(self, addr: str, port: int, context: ssl.SSLContext | None, draining: Callable[[], bool]) -> None:
        self.addr, self.port, self.context, self.draining = addr, port, context, draining
        self.connections: weakref.WeakSet[ssl.SSLObject] = weakref.WeakSet()  # one TLS object a connection

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        async def serve(request: aiohttp.web.Request) -> aiohttp.web.Response:
            return await self.serve(fn, request)

        app = aiohttp.web.Application(client_max_size=MAX_REVIEW_BYTES)
        app.add_routes([aiohttp.web.post("/{id:.*}", serve)])
        runner = aiohttp.web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        try:
            site = aiohttp.web.TCPSite(runner, self.addr or None, self.port, ssl_context=self.context, reuse_address=True)
            await site.start()
            scheme = "https" if self.context is not None else "http"
            # kopf's own configuration manager is off (homing writes its own): the URL is only reported.
            yield kopf.WebhookClientConfig(url=f"{scheme}://{self.addr or 'localhost'}:{self.port}")
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    async def serve(self, fn: kopf.WebhookFn, request: aiohttp.web.Request) -> aiohttp.web.Response:
        started = time.perf_counter()
        tls = request.transport.get_extra_info("ssl_object") if request.transport else None
        if tls is not None and tls not in self.connections:
            self.connections.add(tls)
            metrics.ADMISSION_CONNECTIONS.inc()
        try:
            return await self._answer(fn, request)
        finally:  # the decision alone is homing_webhook_duration_seconds; this adds the loop's queue
            metrics.ADMISSION_SECONDS.observe(time.perf_counter() - started)

    async def _answer(self, fn: kopf.WebhookFn, request: aiohttp.web.Request) -> aiohttp.web.Response:
        try:
            review = orjson.loads(await request.read())
        except ValueError as err:  # orjson.JSONDecodeError is one
            raise aiohttp.web.HTTPBadRequest(reason=str(err) or None)
        if not isinstance(review, dict):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview")
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        answer = await answer_review(fn, review, webhook=request.match_info.get("id"), headers=dict(request.headers), sslpeer=peer)
        response = aiohttp.web.Response(body=orjson.dumps(answer), content_type="application/json")
        if self.draining():
            response.force_close()  # the client reconnects, through the Service, to a replica that stays
        return response
