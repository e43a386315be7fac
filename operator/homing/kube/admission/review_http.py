"""The HTTP/1.1 the API server speaks to a webhook (POSTs of one JSON body each, over connections
kept alive), read and written by h11: a parser that is tested against what peers on a network
send, where homing's own hand-written one once looped for ever on a chunk size of `-6`. h11 is
sans-IO like this module: bytes in, requests out, and a response's bytes, so the server still
answers in the callback the bytes arrive in (admission_server.py).

On top of h11, the limits the API server's own server keeps (docs/operations.md, "Security
model"): the head bounded in bytes and fields, the body in bytes, and framing that could be
read two ways refused (Content-Length beside Transfer-Encoding, which h11 would settle by
the RFC's rule; a proxy in front may settle it otherwise)."""
from __future__ import annotations

from dataclasses import dataclass

import h11

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
# Chunks in one chunked body. h11 spends some 15 µs on a chunk whatever its size, so a megabyte
# of one-byte chunks would hold the operator's loop for seconds; the API server sends a review
# with a Content-Length, and a client that chunks a 3 MiB body in 1 KiB pieces still fits.
MAX_CHUNKS = 4096
# A request's bytes on the wire beyond its head and body: chunk size lines and their CRLFs (at
# MAX_CHUNKS, 16 bytes each). More is chunk extensions or trailers, which carry nothing for a review.
FRAMING_BYTES = MAX_CHUNKS * 16


@dataclass(frozen=True)
class Limits:
    head_bytes: int  # a request line and its headers
    headers: int  # header fields
    body_bytes: int

    @property
    def request_bytes(self) -> int:
        """The most one request may take on the wire."""
        return self.head_bytes + self.body_bytes + FRAMING_BYTES


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # the target without its query (the API server adds "?timeout=…")
    headers: dict[str, str]  # as sent, names in their case
    body: bytes


@dataclass(frozen=True)
class Refusal:
    """A request that cannot be answered on its connection: its answer (a 4xx) closes it."""

    status: int
    reason: str


class Exchange:
    """One connection's HTTP: fed its bytes as they come, hands out each request once it is
    whole, or the refusal that ends the connection; writes the answers."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        # h11 refuses (431) an event still incomplete past this many bytes: a head, a chunk's size
        # line, the trailers. A whole head that came at once is measured in `_head` instead.
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.head_bytes)
        self._head: h11.Request | None = None
        self._body: list[bytes] = []
        self._size = 0
        self._chunks = 0

    def feed(self, data: bytes) -> None:
        self.h11.receive_data(data)

    def next(self) -> Request | Refusal | None:
        """The next whole request, a refusal, or None until more bytes come (and while an answer is owed)."""
        try:
            while True:
                event = self.h11.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    return None
                if type(event) is h11.Data:
                    self._size += len(event.data)
                    if self._size > self.limits.body_bytes:
                        return Refusal(413, f"body over {self.limits.body_bytes} bytes")
                    self._chunks += event.chunk_start
                    if self._chunks > MAX_CHUNKS:
                        return Refusal(413, f"body in over {MAX_CHUNKS} chunks")
                    self._body.append(event.data)
                elif type(event) is h11.Request:
                    refusal = self._check_head(event)
                    if refusal is not None:
                        return refusal
                    self._head = event
                elif type(event) is h11.EndOfMessage:
                    return self._request()
                elif type(event) is h11.ConnectionClosed:
                    return None
        except h11.RemoteProtocolError as err:
            status = err.error_status_hint
            # h11 hints 501 for a transfer coding it does not read: to this webhook's client, a bad request
            return Refusal(status if 400 <= status < 500 else 400, str(err) or "malformed request")

    def _check_head(self, head: h11.Request) -> Refusal | None:
        headers = head.headers
        if len(headers) > self.limits.headers:
            return Refusal(431, f"over {self.limits.headers} header fields")
        size = len(head.method) + len(head.target) + sum(len(name) + len(value) + 4 for name, value in headers)
        if size > self.limits.head_bytes:
            return Refusal(431, f"head over {self.limits.head_bytes} bytes")
        length = None
        chunked = False
        for name, value in headers:
            if name == b"content-length":
                length = int(value)  # h11 has checked it is digits, and one value
            elif name == b"transfer-encoding":
                chunked = True
        if chunked and length is not None:
            return Refusal(400, "both Content-Length and Transfer-Encoding")
        if head.method != b"POST":
            return Refusal(405, f"{head.method.decode('ascii', 'replace')} is not served: reviews are POSTed")
        if length is not None and length > self.limits.body_bytes:
            return Refusal(413, f"body over {self.limits.body_bytes} bytes")
        return None

    def _request(self) -> Request:
        head, body = self._head, b"".join(self._body)
        assert head is not None  # h11 sends a Request before any EndOfMessage
        self._head, self._body, self._size, self._chunks = None, [], 0, 0
        return Request(
            method=head.method.decode("ascii"),
            path=head.target.partition(b"?")[0].decode("ascii", "replace"),
            headers={name.decode("latin-1"): value.decode("latin-1") for name, value in head.headers.raw_items()},
            body=body,
        )

    def answer(self, status: int, body: bytes, content_type: str, close: bool) -> bytes:
        """The response's bytes; `close` says the connection ends after it (h11 adds `Connection:
        close` itself when the client asked for that, or spoke HTTP/1.0)."""
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        if close:
            headers.append(("Connection", "close"))
        out = self.h11.send(h11.Response(status_code=status, headers=headers))
        out += self.h11.send(h11.Data(data=body)) if body else b""
        return out + self.h11.send(h11.EndOfMessage())

    def refuse(self, refusal: Refusal) -> bytes:
        """The refusal's response, or nothing should this connection's state allow no response
        (a refusal while an answer was being written): the connection is closed either way."""
        try:
            return self.answer(refusal.status, refusal.reason.encode(), TEXT, close=True)
        except h11.LocalProtocolError:
            return b""

    def next_cycle(self) -> bool:
        """After an answer: True when the connection carries on to the next request, False when it must end."""
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
            return True
        return False
