"""homing's webhook server, run by kopf through its public server protocol
(`settings.admission.server`): kopf hands over the function that runs the registered
`@kopf.on.mutate` handler (handlers.py), and this server calls it for every pod CREATE review. What it
adds to kopf's own server: TLS from certstore's one SSLContext (certificates renewed in place,
no restart of the server), `Connection: close` on every answer while draining (drain.py), an
allowed, unchanged answer whatever fails on a review's way (behaviour.md "Operation": the webhook
never rejects a pod), each review timed from being read whole to its answer, each connection counted.

It faces whatever can reach its port (docs/operations.md, "Security model"): HTTP is h11's
(review_http.py) within the API server's own limits; a connection has a read and an idle timeout,
a byte cap, and there is a cap on connections; and only a POST to the webhook's path carrying an
AdmissionReview of a pod CREATE reaches kopf's function. Anything else is answered here, allowed
and unchanged when it is a review, a 4xx when it is not, without kopf: kopf keeps a memo for the
object of every non-CREATE review for the process's life.

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
from contextlib import suppress
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

import kopf
import orjson

from homing.config import Webhook
from homing.kube.admission import eager
from homing.kube.admission.review_http import JSON, TEXT, Exchange, Limits, Refusal, Request
from homing.kube.client import without_bookkeeping
from homing.kube.signals import logs, metrics

if TYPE_CHECKING:
    from kopf._cogs.structs.reviews import Request as KopfRequest  # kopf exports no name for it (kopf pinned)

log = logs.get("homing.admission")

WEBHOOK_ID = "homing-pods"  # the kopf handler's id: the last part of the webhook's path
WEBHOOK_PATH = f"/{WEBHOOK_ID}"
REVIEW_VERSION = "admission.k8s.io/v1"  # the only one the webhook configuration asks for (webhookconfig.py)
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}
# The API server's review uids are UUIDs, 36 characters: a longer one is forged, and would be
# echoed in the answer and carried through kopf.
MAX_UID_CHARS = 128


# The review being answered: the JSON patch its handler handed back. Set by the server around
# kopf's function, which awaits the handler in the same task; unset anywhere else.
_PATCH_SLOT: ContextVar[list[dict[str, Any]] | None] = ContextVar("homing_patch_slot", default=None)


def hand_back(ops: list[dict[str, Any]]) -> bool:
    """Gives the review's JSON patch to the server answering it; False when no homing server
    is answering (kopf's own, a test's), and the caller then uses kopf's `Patch`."""
    slot = _PATCH_SLOT.get()
    if slot is None:
        return False
    slot.extend(ops)
    return True


def with_patch(answer: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """kopf's answer, carrying the handed-back patch after any of kopf's own; a refusal carries none."""
    response = answer.get("response")
    if not ops or not isinstance(response, dict) or not response.get("allowed"):
        return answer
    if response.get("patch"):
        ops = [*orjson.loads(base64.b64decode(response["patch"])), *ops]
    response["patch"], response["patchType"] = base64.b64encode(orjson.dumps(ops)).decode("ascii"), "JSONPatch"
    return answer


def without_managed_fields(review: dict[str, Any]) -> dict[str, Any]:
    """The review with its objects' managedFields dropped, in place: the apiserver's bookkeeping
    of who set which field, often a third of a pod's bytes, never read by homing."""
    request = review.get("request")
    if isinstance(request, dict):
        for key in ("object", "oldObject"):
            without_bookkeeping(request.get(key))
    return review


def review_uid(review: object) -> str | None:
    """The uid of an AdmissionReview this server answers; None when `review` is none."""
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview" or review.get("apiVersion") != REVIEW_VERSION:
        return None
    request = review.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    return uid if isinstance(uid, str) and 0 < len(uid) <= MAX_UID_CHARS else None


def for_kopf(review: dict[str, Any]) -> bool:
    """A pod CREATE with what kopf reads (its object and user): the only review handed to kopf's
    function. For any other operation kopf keeps a memo of the object named, for the process's
    life; and homing's handler is registered for pod CREATEs alone."""
    request = review["request"]
    return (request.get("operation") == "CREATE" and request.get("resource") == POD_RESOURCE
            and not request.get("subResource") and isinstance(request.get("object"), dict)
            and isinstance(request.get("userInfo"), dict))


def allowed_unchanged(review: object) -> dict[str, Any]:
    return {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview",
            "response": {"uid": review_uid(review) or "", "allowed": True}}


def failed_open(where: str, review: object, error: BaseException | None = None, **fields: object) -> dict[str, Any]:
    """The answer when something on a review's way failed: allowed and unchanged, since a
    preference never denies a pod. Counting and logging it are tried, not relied on: they can fail too."""
    with suppress(Exception):
        metrics.ADMISSION_FAILED_OPEN.labels(where).inc()
    with suppress(Exception):
        log.error("admission failed; pod admitted unchanged", where=where, uid=review_uid(review), exc_info=error, **fields)
    return allowed_unchanged(review)


def turned_away(reason: str, **fields: object) -> None:
    """Counted, and logged at debug: under a flood, a line each would be the flood's amplifier."""
    with suppress(Exception):  # bookkeeping: never the reason a request goes unanswered
        metrics.ADMISSION_TURNED_AWAY.labels(reason).inc()
        log.debug("webhook request turned away", reason=reason, **fields)


async def answer_review(fn: kopf.WebhookFn, review: dict[str, Any], *, webhook: str | None = None,
                        headers: dict[str, str] | None = None, sslpeer: dict[str, Any] | None = None) -> dict[str, Any]:
    """kopf's answer to one review, with the handed-back patch; an allowed, unchanged one should
    kopf fail, or refuse the pod (which it does when a handler raised)."""
    slot: list[dict[str, Any]] = []
    token = _PATCH_SLOT.set(slot)
    try:
        request = cast("KopfRequest", without_managed_fields(review))
        answer = await fn(request, webhook=webhook, headers=headers, sslpeer=sslpeer)
    except Exception as err:  # kopf refused the review (an unknown resource, say)
        return failed_open("kopf", review, err)
    finally:
        _PATCH_SLOT.reset(token)
    try:
        response = answer["response"]
        if response.get("allowed") is not True:
            status = response.get("status")
            message = status.get("message") if isinstance(status, dict) else None
            return failed_open("refused", review, refusal=str(message)[:500])
        return with_patch(cast(dict[str, Any], answer), slot)
    except Exception as err:
        return failed_open("server", review, err)


class AdmissionServer:
    """The server kopf runs (`settings.admission.server`): listens, answers, and sweeps out the
    connections past their deadlines; `limits` are the webhook settings' (config.py)."""

    def __init__(self, addr: str, port: int, context: ssl.SSLContext | None, draining: Callable[[], bool],
                 limits: Webhook | None = None) -> None:
        self.addr, self.port, self.context, self.draining = addr, port, context, draining
        self.limits = limits or Webhook()
        self.http_limits = Limits(self.limits.max_head_bytes, self.limits.max_headers, self.limits.max_review_bytes)
        self.connections: set[ReviewConnection] = set()

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: ReviewConnection(self, fn), self.addr or None, self.port, ssl=self.context, reuse_address=True,
            # the handshake is a new connection's first read: it gets the read timeout, not asyncio's 60 s
            ssl_handshake_timeout=self.limits.read_timeout_seconds if self.context is not None else None,
        )
        sweeper = asyncio.ensure_future(self._sweep())
        try:
            scheme = "https" if self.context is not None else "http"
            # kopf's own configuration manager is off (homing writes its own): the URL is only reported.
            yield kopf.WebhookClientConfig(url=f"{scheme}://{self.addr or 'localhost'}:{self.port}")
            await asyncio.Event().wait()
        finally:
            sweeper.cancel()
            server.close()
            for connection in list(self.connections):
                connection.end()
            await server.wait_closed()

    async def _sweep(self) -> None:
        """Closes each connection past its deadline. One timer for all: a connection only notes a
        time when its state changes, so a review costs no timer of its own."""
        tick = min(1.0, max(0.01, min(self.limits.read_timeout_seconds, self.limits.idle_timeout_seconds) / 4))
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(tick)
            now = loop.time()
            for connection in [c for c in self.connections if c.deadline is not None and c.deadline <= now]:
                try:
                    connection.expire()
                except Exception:  # one connection's close must not stop the timeouts of the others
                    with suppress(Exception):  # nor a log line that fails
                        log.exception("closing a webhook connection past its deadline failed")
                    connection.transport, connection.deadline = None, None
                    self.connections.discard(connection)


class ReviewConnection(asyncio.Protocol):
    """One client connection (the API server keeps each alive for many reviews), answered in order."""

    def __init__(self, server: AdmissionServer, fn: kopf.WebhookFn) -> None:
        self.server, self.fn, self.limits = server, fn, server.limits
        self.http = Exchange(server.http_limits)
        self.transport: asyncio.Transport | None = None
        self.counted = False
        self.busy = False  # a review whose kopf function waits: the next is read once it is answered
        self.write_paused = False  # the peer does not read its answers: nothing more is read from it
        self.reading = True
        self.received = 0  # bytes, against limits.max_connection_bytes
        self.request_bytes = 0  # since the request being read began, against Limits.request_bytes
        self.awaiting = True  # between requests: the next byte begins one
        self.deadline: float | None = None  # the loop's time at which the sweeper closes this connection
        self.overdue = "read-timeout"  # what passing the deadline means

    # --- asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # a stream server's: it reads, writes and aborts
        if len(self.server.connections) >= self.limits.max_connections:
            turned_away("connection-cap", peer=stream.get_extra_info("peername"))
            stream.abort()
            return
        self.transport = stream
        self.server.connections.add(self)
        # Opened to send a request at once: the first request's read timeout runs from here.
        self.awaiting = False
        self._wait(self.limits.read_timeout_seconds, "read-timeout")

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.transport, self.deadline = None, None

    def data_received(self, data: bytes) -> None:
        if self.transport is None:
            return
        try:
            self.received += len(data)
            if self.awaiting:  # a request begins: from its first byte, it has the read timeout to come whole
                self.awaiting, self.request_bytes = False, 0
                self._wait(self.limits.read_timeout_seconds, "read-timeout")
            self.request_bytes += len(data)
            self.http.feed(data)
            if self.request_bytes > self.server.http_limits.request_bytes:  # whatever h11 makes of them: too many
                self._refuse(Refusal(413, f"request over {self.server.http_limits.request_bytes} bytes"))
                return
        except Exception as err:
            self._broken(err)
            return
        self._serve()

    def pause_writing(self) -> None:
        self.write_paused = True
        self._read_or_not()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._read_or_not()
        self._serve()

    # --- the sweeper's and the server's

    def expire(self) -> None:
        turned_away(self.overdue, peer=self.transport.get_extra_info("peername") if self.transport else None)
        self.end()

    def end(self) -> None:
        if self.transport is not None:
            if self.write_paused:  # a peer that reads nothing would keep a closing transport flushing for ever
                self.transport.abort()
            else:
                self.transport.close()
        self.server.connections.discard(self)
        self.transport, self.deadline = None, None

    # --- reading and answering

    def _wait(self, seconds: float, overdue: str) -> None:
        self.deadline, self.overdue = asyncio.get_running_loop().time() + seconds, overdue

    def _read_or_not(self) -> None:
        """Reads while a review can be answered: not while kopf's function works on one, nor while
        the peer leaves its answers unread. What it sends meanwhile waits in the network."""
        want = not (self.busy or self.write_paused)
        if self.transport is not None and want != self.reading:
            self.reading = want
            if want:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def _serve(self) -> None:
        """Answers each request that is whole."""
        try:
            while self.transport is not None and not self.busy and not self.write_paused:
                item = self.http.next()
                if item is None:
                    return
                if isinstance(item, Refusal):
                    self._refuse(item)
                    return
                self._answer(item)
        except Exception as err:
            self._broken(err)

    def _broken(self, err: Exception) -> None:
        """homing's own code around the reviews raised, with no review in hand: an allowed answer
        without a uid (which the API server takes as a failed call, and admits the pod), then the end."""
        answer = failed_open("server", None, err)
        try:
            self._write(self.http.answer(200, orjson.dumps(answer), JSON, close=True), keep=False)
        except Exception:  # the connection's HTTP is past answering: its end is the answer
            self.end()

    def _refuse(self, refusal: Refusal) -> None:
        turned_away("bad-http", status=refusal.status, why=refusal.reason[:200])
        self._write(self.http.refuse(refusal), keep=False)

    def _answer(self, request: Request) -> None:
        started = time.perf_counter()
        review: object = None
        try:
            try:
                review = orjson.loads(request.body)
            except orjson.JSONDecodeError as err:
                turned_away("not-a-review")
                return self._finish(started, 400, (str(err) or "not JSON").encode(), TEXT)
            if not self.counted:
                self.counted = True
                metrics.ADMISSION_CONNECTIONS.inc()
            if review_uid(review) is None or not isinstance(review, dict):
                turned_away("not-a-review")
                status = 400 if request.path == WEBHOOK_PATH else 404
                return self._finish(started, status, b"not an AdmissionReview", TEXT)
            if request.path != WEBHOOK_PATH or not for_kopf(review):
                turned_away("not-a-pod-create")
                return self._finish(started, 200, orjson.dumps(allowed_unchanged(review)), JSON)
            peer = self.transport.get_extra_info("peercert") if self.transport else None
            answered = eager.start(answer_review(self.fn, review, webhook=WEBHOOK_ID, headers=request.headers,
                                                 sslpeer=peer), asyncio.get_running_loop())
            if answered.done():
                metrics.ADMISSION_ANSWERS.labels("at-arrival").inc()
                return self._finish(started, 200, orjson.dumps(answered.result()), JSON)
            self.busy, self.deadline = True, None  # kopf's function owes the answer, not the peer
            self._read_or_not()
            answered.add_done_callback(lambda f: self._finish_later(started, review, f))
            with suppress(Exception):  # the answer is kopf's to give now; a count cannot change it
                metrics.ADMISSION_ANSWERS.labels("after-a-wait").inc()
        except Exception as err:
            self._finish(started, 200, orjson.dumps(failed_open("server", review, err)), JSON)

    def _finish_later(self, started: float, review: object, answered: asyncio.Future[dict[str, Any]]) -> None:
        self.busy = False
        if self.transport is None:  # the peer left meanwhile
            return
        if answered.cancelled():  # the operator stopping: the API server's policy admits the pod
            self.end()
            return
        try:
            try:
                body = orjson.dumps(answered.result())
            except Exception as err:
                body = orjson.dumps(failed_open("server", review, err))
            self._read_or_not()
            self._finish(started, 200, body, JSON)
        except Exception as err:  # the connection's HTTP is past answering: its end is the answer
            failed_open("server", review, err)
            self.end()
            return
        self._serve()

    def _finish(self, started: float, status: int, body: bytes, content_type: str) -> None:
        """Writes an answer; what follows the write never raises, so no request is answered twice."""
        close = spent = self.received > self.limits.max_connection_bytes
        with suppress(Exception):  # a drain flag that cannot be read keeps the connection, as before a drain
            close = close or self.server.draining()  # draining: the client reconnects to a replica that stays
        data = self.http.answer(status, body, content_type, close=close)
        self._write(data, keep=self.http.next_cycle())
        with suppress(Exception):  # timing is bookkeeping: the answer is written
            if spent:
                turned_away("connection-bytes")
            # the decision alone is homing_webhook_duration_seconds; this adds the wait for kopf's function
            metrics.ADMISSION_SECONDS.observe(time.perf_counter() - started)

    def _write(self, data: bytes, keep: bool) -> None:
        if self.transport is None:
            return
        self.transport.write(data)
        if not keep:
            self.end()
            return
        self.awaiting = True
        self._wait(self.limits.idle_timeout_seconds, "idle-timeout")
