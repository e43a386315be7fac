"""homing's webhook server on its own event loop in a thread, and a raw-socket client that can
send what no HTTP client library would (a chunk size of `-6`, two Content-Lengths, half a head).

The server gets a thread of its own so that a server whose loop never returns (what a `-6`
chunk size once did) fails the test: the client's reads time out, and the test goes on,
instead of the whole test run freezing with the loop."""
from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import h11
import orjson

from homing.config import Webhook
from homing.kube.admission.admission_server import WEBHOOK_ID, AdmissionServer

POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}


def review(uid: str = "u-1", operation: str = "CREATE", resource: dict | None = None, obj: dict | None = None,
           **request: object) -> dict:
    """An AdmissionReview as the API server sends one for a pod."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": resource or POD_RESOURCE, "operation": operation, "namespace": "ns",
                        "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
                        "object": obj if obj is not None else {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
                        "dryRun": False, **request}}


BODY = orjson.dumps(review())


def sized(body: bytes = BODY, target: str = f"/{WEBHOOK_ID}?timeout=2s", extra: bytes = b"") -> bytes:
    return (f"POST {target} HTTP/1.1\r\nHost: homing\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n").encode() + extra + b"\r\n" + body


def chunked(body: bytes = BODY, sizes: list[bytes] | None = None, target: str = f"/{WEBHOOK_ID}") -> bytes:
    """The body in two chunks; `sizes` replaces their size lines (each as written)."""
    parts = [body[:10], body[10:]]
    lines = sizes or [b"%x" % len(p) for p in parts]
    chunks = b"".join(line + b"\r\n" + part + b"\r\n" for line, part in zip(lines, parts))
    return (f"POST {target} HTTP/1.1\r\nHost: homing\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode() + chunks + b"0\r\n\r\n"


async def allowing(data: dict, **_: object) -> dict:
    """Stands where kopf's function stands: allows the pod and says it saw the review."""
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": data["request"]["uid"], "allowed": True, "warnings": ["seen by kopf's function"]}}


class ServerThread:
    """AdmissionServer, plain HTTP on a free port, run by the protocol kopf runs it by, on a loop in a thread."""

    def __init__(self, fn: Callable = allowing, limits: Webhook | None = None) -> None:
        self.fn, self.limits = fn, limits or Webhook()
        self.port = 0
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # reported by __enter__ or the test
            self.error = err
            self.ready.set()

    async def _serve(self) -> None:
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        server = AdmissionServer("127.0.0.1", self.port, None, draining=lambda: False, limits=self.limits)
        configs = server(self.fn)
        await configs.__anext__()
        self.ready.set()
        await self.stop.wait()
        await configs.aclose()

    def __enter__(self) -> ServerThread:
        self.thread.start()
        if not self.ready.wait(10) or self.error is not None:
            raise RuntimeError(f"the server did not start: {self.error!r}")
        return self

    def __exit__(self, *_: object) -> None:
        if self.loop is not None and self.stop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(5)  # a loop that never returns leaves its (daemon) thread behind


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return orjson.loads(self.body)


@dataclass
class Talk:
    responses: list[Response] = field(default_factory=list)
    closed: bool = False  # the server ended the connection (or reset it)
    closed_after: float | None = None  # seconds from the last byte sent to the end
    unparsed: bytes = b""  # bytes that are no HTTP response (there should be none)


def responses(raw: bytes) -> tuple[list[Response], bytes]:
    """The HTTP responses in `raw`, read by h11 as a client that had sent one request for each."""
    client, out = h11.Connection(h11.CLIENT), []
    client.receive_data(raw)
    head: h11.Response | None = None
    body = b""
    try:
        while True:
            if client.our_state is h11.IDLE:
                client.send(h11.Request(method="POST", target="/", headers=[("Host", "t"), ("Content-Length", "0")]))
                client.send(h11.EndOfMessage())
            event = client.next_event()
            if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                break
            if isinstance(event, h11.Response):
                head, body = event, b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                out.append(Response(head.status_code, {k.decode().lower(): v.decode() for k, v in head.headers}, body))
                if client.our_state is h11.DONE and client.their_state is h11.DONE:
                    client.start_next_cycle()
                else:
                    break
    except h11.ProtocolError:  # what follows is no HTTP response: handed back unparsed
        pass
    return out, client.trailing_data[0]


def talk(port: int, pieces: list[bytes] | bytes, wait: float, pause: float = 0.0, expect: int | None = None) -> Talk:
    """Sends the pieces (one send each, `pause` apart), then reads until the server ends the
    connection, `wait` seconds pass or `expect` responses came."""
    if isinstance(pieces, bytes):
        pieces = [pieces]
    sock = socket.create_connection(("127.0.0.1", port), timeout=wait)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    got, closed = b"", False
    try:
        for i, piece in enumerate(pieces):
            if i and pause:
                time.sleep(pause)
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):  # the server ended it early
                break
        sent = time.monotonic()
        deadline = sent + wait
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                chunk = sock.recv(1 << 16)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if expect is not None and len(responses(got)[0]) >= expect:
                break
        out, rest = responses(got)
        return Talk(out, closed, time.monotonic() - sent if closed else None, rest)
    finally:
        sock.close()
