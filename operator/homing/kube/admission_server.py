"""homing's webhook server, run by kopf through its public server protocol
(`settings.admission.server`): kopf hands over the function that runs the registered
`@kopf.on.mutate` handler (handlers.py), and this server calls it for every review. What it
adds to kopf's own server: TLS from certstore's one SSLContext (certificates renewed in place,
no restart of the server), `Connection: close` on every answer while draining (drain.py), an
allowed, unchanged answer should anything fail (behaviour.md "Operation": the webhook never
rejects a pod), each review timed from being read whole to its answer, each connection counted.

A review is read and answered in the callback its last bytes arrive in (review_http.py parses
the request; eager.py runs kopf's function there up to its first real wait). Passed through
a web framework's tasks it would wait a turn of the operator's loop for each hop, each turn as
long as the burst of watch events queued in it (docs/design.md, "A review answered in the turn it arrives").

The handler's JSON patch comes back to this server in a slot (`hand_back`), not through kopf's
`Patch`: kopf would rebuild it by deep-copying the pod and diffing the copy whole, most of kopf's
time on a review (docs/design.md, "The patch, handed back"). And kopf is handed the review without
the pod's managedFields, which it would copy too and nothing reads."""
from __future__ import annotations

import asyncio
import base64
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar

import kopf
import orjson

from homing.kube import eager, logs, metrics
from homing.kube.review_http import BadRequest, Request, RequestReader, response

log = logs.get("homing.admission")

WEBHOOK_ID = "homing-pods"  # the kopf handler's id: the last part of the webhook's path
MAX_REVIEW_BYTES = 8 * 1024 * 1024  # a pod with large annotations still fits


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

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: ReviewConnection(fn, self.draining), self.addr or None, self.port,
                                          ssl=self.context, reuse_address=True)
        try:
            scheme = "https" if self.context is not None else "http"
            # kopf's own configuration manager is off (homing writes its own): the URL is only reported.
            yield kopf.WebhookClientConfig(url=f"{scheme}://{self.addr or 'localhost'}:{self.port}")
            await asyncio.Event().wait()
        finally:
            server.close()
            await server.wait_closed()


class ReviewConnection(asyncio.Protocol):
    """One client connection (the API server keeps each alive for many reviews), answered in order."""

    def __init__(self, fn: kopf.WebhookFn, draining: Callable[[], bool]) -> None:
        self.fn, self.draining = fn, draining
        self.reader = RequestReader(MAX_REVIEW_BYTES)
        self.transport: asyncio.Transport | None = None
        self.counted = False
        self.busy = False  # a review whose kopf function waits: the next is read once it is answered

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        self._answer_ready()

    def _answer_ready(self) -> None:
        while self.transport is not None and not self.busy:
            try:
                request = self.reader.next()
            except BadRequest as err:
                self._write(response(err.status, str(err).encode(), "text/plain; charset=utf-8", close=True), close=True)
                return
            if request is None:
                return
            self._answer(request)

    def _answer(self, request: Request) -> None:
        started = time.perf_counter()
        if not self.counted:
            self.counted = True
            metrics.ADMISSION_CONNECTIONS.inc()
        try:
            review = orjson.loads(request.body)
        except ValueError as err:  # orjson.JSONDecodeError is one
            return self._finish(started, request, 400, (str(err) or "not JSON").encode(), "text/plain; charset=utf-8")
        if not isinstance(review, dict):
            return self._finish(started, request, 400, b"not an AdmissionReview", "text/plain; charset=utf-8")
        peer = self.transport.get_extra_info("peercert") if self.transport else None
        answered = eager.start(answer_review(self.fn, review, webhook=request.path.lstrip("/"), headers=request.headers,
                                             sslpeer=peer), asyncio.get_running_loop())
        if answered.done():
            metrics.ADMISSION_ANSWERS.labels("at-arrival").inc()
            return self._finish(started, request, 200, orjson.dumps(answered.result()), "application/json")
        metrics.ADMISSION_ANSWERS.labels("after-a-wait").inc()
        self.busy = True
        answered.add_done_callback(lambda f: self._finish_later(started, request, f))

    def _finish_later(self, started: float, request: Request, answered: asyncio.Future[dict]) -> None:
        self.busy = False
        if answered.cancelled() or answered.exception() is not None:  # the operator stopping: the API server's policy admits the pod
            self._write(b"", close=True)
            return
        self._finish(started, request, 200, orjson.dumps(answered.result()), "application/json")
        self._answer_ready()

    def _finish(self, started: float, request: Request, status: int, body: bytes, content_type: str) -> None:
        close = request.close or self.draining()  # draining: the client reconnects to a replica that stays
        self._write(response(status, body, content_type, close=close), close=close)
        # the decision alone is homing_webhook_duration_seconds; this adds the wait for kopf's function
        metrics.ADMISSION_SECONDS.observe(time.perf_counter() - started)

    def _write(self, data: bytes, close: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(data)
        if close:
            self.transport.close()
            self.transport = None
