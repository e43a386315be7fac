"""homing's webhook server, run by kopf through its public server protocol
(`settings.admission.server`): kopf hands over the function that runs the registered
`@kopf.on.mutate` handler (handlers.py), and this server calls it for every review. What it
adds to kopf's own server: TLS from certstore's one SSLContext (certificates renewed in place,
no restart of the server), `Connection: close` on every answer while draining (drain.py), an
allowed, unchanged answer should anything fail or the operator's loop not take the review in
time (behaviour.md "Operation": the webhook never rejects or holds up a pod), and each review
timed with its waits, each connection counted.

Reviews are read, parsed and answered on a thread of their own: on the operator's loop, a
review's connection, request and handler each waited behind the watch events of the same
burst (a turn of the loop each). Only kopf's function runs on the operator's loop, as one
callback, so the memory is only ever touched from that loop (design.md "Admission")."""
from __future__ import annotations

import asyncio
import concurrent.futures
import ssl
import sys
import threading
import time
import types
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from typing import Any

import aiohttp.web
import kopf
import orjson

from homing.kube import logs, metrics

log = logs.get("homing.admission")

WEBHOOK_ID = "homing-pods"  # the kopf handler's id: the last part of the webhook's path
MAX_REVIEW_BYTES = 8 * 1024 * 1024  # a pod with large annotations still fits; aiohttp's default is 1 MiB
# CPython hands the interpreter lock to a waiting thread after this long (default 5 ms): the
# answering thread would otherwise wait that long, at each read and write, behind a busy loop.
SWITCH_INTERVAL_SECONDS = 0.001


def allowed_unchanged(review: dict) -> dict:
    request = review.get("request") or {}
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": review.get("kind", "AdmissionReview"),
            "response": {"uid": request.get("uid", ""), "allowed": True}}


@types.coroutine
def _rest_of(coro: Coroutine[Any, Any, Any], awaited: Any) -> Generator[Any, Any, Any]:
    """A coroutine that suspended when stepped by hand (on `awaited`), carried on by a task:
    what `await` would have done from its first suspension on."""
    while True:
        try:
            sent = yield awaited
        except BaseException as err:  # cancelled, or what it awaited failed: the coroutine decides
            try:
                awaited = coro.throw(err)
            except StopIteration as done:
                return done.value
            continue
        try:
            awaited = coro.send(sent)
        except StopIteration as done:
            return done.value


class Handoff:
    """One review's decision, run on the operator's loop. Given up only if the loop has not
    begun it in time: a decision begun (its promise made in the memory) is always answered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = "waiting"  # → "begun" on the operator's loop, or → "abandoned" by the answering thread

    def begin(self) -> bool:
        with self.lock:
            if self.state == "abandoned":
                return False
            self.state = "begun"
            return True

    def abandon(self) -> bool:
        with self.lock:
            if self.state == "begun":
                return False
            self.state = "abandoned"
            return True


def run_on_loop(loop: asyncio.AbstractEventLoop, call: Callable[[], Coroutine[Any, Any, dict]],
                handoff: Handoff) -> concurrent.futures.Future[dict]:
    """Runs `call()` on `loop` as one callback (kopf's function does not suspend for a handler
    that awaits nothing); should it suspend, a task carries it on. The future is thread-safe."""
    result: concurrent.futures.Future[dict] = concurrent.futures.Future()

    def finish(task: asyncio.Future[dict]) -> None:
        if task.cancelled():
            result.cancel()
        elif task.exception() is not None:
            result.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            result.set_result(task.result())

    def begin() -> None:
        if not handoff.begin():
            result.cancel()
            return
        try:
            coro = call()
            awaited = coro.send(None)
        except StopIteration as done:
            result.set_result(done.value)
        except BaseException as err:
            result.set_exception(err)
        else:
            loop.create_task(_rest_of(coro, awaited)).add_done_callback(finish)  # type: ignore[arg-type]

    loop.call_soon_threadsafe(begin)
    return result


class AdmissionServer:
    def __init__(self, addr: str, port: int, context: ssl.SSLContext | None, draining: Callable[[], bool],
                 wait_for_loop_seconds: float = 1.0) -> None:
        self.addr, self.port, self.context, self.draining = addr, port, context, draining
        self.wait_for_loop_seconds = wait_for_loop_seconds  # then the pod goes in unchanged
        self.connections: weakref.WeakSet[ssl.SSLObject] = weakref.WeakSet()  # one TLS object a connection

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        operator_loop = asyncio.get_running_loop()
        serving: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
        thread = threading.Thread(target=self._serve_forever, args=(fn, operator_loop, serving),
                                  name="homing-admission", daemon=True)
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        thread.start()
        own_loop = await asyncio.wrap_future(serving)  # raises if the port could not be bound
        try:
            scheme = "https" if self.context is not None else "http"
            # kopf's own configuration manager is off (homing writes its own): the URL is only reported.
            yield kopf.WebhookClientConfig(url=f"{scheme}://{self.addr or 'localhost'}:{self.port}")
            await asyncio.Event().wait()
        finally:
            own_loop.call_soon_threadsafe(own_loop.stop)
            await asyncio.to_thread(thread.join, 10)

    def _serve_forever(self, fn: kopf.WebhookFn, operator_loop: asyncio.AbstractEventLoop,
                       serving: concurrent.futures.Future[asyncio.AbstractEventLoop]) -> None:
        """The answering thread: its own loop, until the operator's side stops it."""
        loop = asyncio.new_event_loop()
        try:
            runner = loop.run_until_complete(self._start(fn, operator_loop))
        except BaseException as err:
            serving.set_exception(err)
            loop.close()
            return
        serving.set_result(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    async def _start(self, fn: kopf.WebhookFn, operator_loop: asyncio.AbstractEventLoop) -> aiohttp.web.AppRunner:
        async def serve(request: aiohttp.web.Request) -> aiohttp.web.Response:
            return await self.serve(fn, request, operator_loop)

        app = aiohttp.web.Application(client_max_size=MAX_REVIEW_BYTES)
        app.add_routes([aiohttp.web.post("/{id:.*}", serve)])
        runner = aiohttp.web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        try:
            site = aiohttp.web.TCPSite(runner, self.addr or None, self.port, ssl_context=self.context, reuse_address=True)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        return runner

    async def serve(self, fn: kopf.WebhookFn, request: aiohttp.web.Request,
                    operator_loop: asyncio.AbstractEventLoop) -> aiohttp.web.Response:
        started = time.perf_counter()
        tls = request.transport.get_extra_info("ssl_object") if request.transport else None
        if tls is not None and tls not in self.connections:
            self.connections.add(tls)
            metrics.ADMISSION_CONNECTIONS.inc()
        try:
            return await self._answer(fn, request, operator_loop)
        finally:  # the decision alone is homing_webhook_duration_seconds; this adds the waits
            metrics.ADMISSION_SECONDS.observe(time.perf_counter() - started)

    async def _answer(self, fn: kopf.WebhookFn, request: aiohttp.web.Request,
                      operator_loop: asyncio.AbstractEventLoop) -> aiohttp.web.Response:
        try:
            review = orjson.loads(await request.read())
        except ValueError as err:  # orjson.JSONDecodeError is one
            raise aiohttp.web.HTTPBadRequest(reason=str(err) or None)
        if not isinstance(review, dict):
            raise aiohttp.web.HTTPBadRequest(reason="not an AdmissionReview")
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        webhook, headers = request.match_info.get("id"), dict(request.headers)
        handoff = Handoff()
        decided = asyncio.wrap_future(run_on_loop(
            operator_loop, lambda: fn(review, webhook=webhook, headers=headers, sslpeer=peer), handoff))
        try:
            answer = await asyncio.wait_for(asyncio.shield(decided), self.wait_for_loop_seconds)
        except asyncio.TimeoutError:
            if handoff.abandon():
                log.warning("the operator's loop did not take the review in time; pod admitted unchanged",
                            seconds=self.wait_for_loop_seconds)
                metrics.ADMISSIONS.labels("unanswered").inc()
                answer = allowed_unchanged(review)
            else:  # begun: its promise is in the memory, so the pod gets the decision
                answer = await self._decided(decided, review)
        except Exception:
            answer = self._failed(review)
        response = aiohttp.web.Response(body=orjson.dumps(answer), content_type="application/json")
        if self.draining():
            response.force_close()  # the client reconnects, through the Service, to a replica that stays
        return response

    async def _decided(self, decided: asyncio.Future[dict], review: dict) -> dict:
        try:
            return await decided
        except Exception:
            return self._failed(review)

    @staticmethod
    def _failed(review: dict) -> dict:
        log.exception("admission failed; pod admitted unchanged")  # kopf refused it (an unknown resource, say)
        return allowed_unchanged(review)
