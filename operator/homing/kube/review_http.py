"""The HTTP/1.1 the API server speaks to a webhook: POSTs of one JSON body each, with a
Content-Length (chunked bodies are read too), over connections kept alive. Bytes in,
requests out, and a response's bytes: no I/O here, so the server answers in the callback
the bytes arrive in (admission_server.py)."""
from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus

MAX_HEAD_BYTES = 64 * 1024  # a request line and headers; the API server sends well under 1 KiB


class BadRequest(Exception):
    """A request that cannot be answered on its connection; the answer closes it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # the target without its query (the API server adds "?timeout=…")
    headers: dict[str, str]  # as sent; look up by lowercase name through `header`
    body: bytes
    close: bool  # the client asked for the connection to end after this answer

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name), None)


class RequestReader:
    """Fed the connection's bytes as they come; hands out each request once it is whole."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self.buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def next(self) -> Request | None:
        """The next whole request, or None until more bytes come."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise BadRequest(431, "request head too large")
            return None
        method, path, version, headers = _head(bytes(self.buffer[:end]).decode("latin-1"))
        read = _chunked(self.buffer, end + 4, self.max_body) if _is_chunked(headers) else \
            _sized(self.buffer, end + 4, _length(headers), self.max_body)
        if read is None:
            return None
        body, used = read
        del self.buffer[:used]
        if method != "POST":
            raise BadRequest(405, f"{method} is not served: reviews are POSTed")
        connection = next((v.lower() for k, v in headers.items() if k.lower() == "connection"), "")
        close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        return Request(method, path, headers, body, close)


def _head(text: str) -> tuple[str, str, str, dict[str, str]]:
    line, *fields = text.split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(400, "not an HTTP/1.x request line")
    headers: dict[str, str] = {}
    for field in fields:
        name, sep, value = field.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(400, "malformed header")
        headers[name] = value.strip()
    return parts[0], parts[1].partition("?")[0], parts[2], headers


def _is_chunked(headers: dict[str, str]) -> bool:
    return any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers.items())


def _length(headers: dict[str, str]) -> int:
    value = next((v for k, v in headers.items() if k.lower() == "content-length"), "0")
    if not value.isdigit():
        raise BadRequest(400, "bad Content-Length")
    return int(value)


def _sized(buffer: bytearray, start: int, length: int, max_body: int) -> tuple[bytes, int] | None:
    if length > max_body:
        raise BadRequest(413, f"body over {max_body} bytes")
    if len(buffer) < start + length:
        return None
    return bytes(buffer[start:start + length]), start + length


def _chunked(buffer: bytearray, start: int, max_body: int) -> tuple[bytes, int] | None:
    body, at = bytearray(), start
    while True:
        eol = buffer.find(b"\r\n", at)
        if eol < 0:
            return None
        size_text = bytes(buffer[at:eol]).split(b";")[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadRequest(400, "bad chunk size") from None
        if len(body) + size > max_body:
            raise BadRequest(413, f"body over {max_body} bytes")
        if size == 0:
            trailers_end = buffer.find(b"\r\n\r\n", eol)  # the last chunk's line ends the trailers too
            if trailers_end == eol:
                return bytes(body), eol + 4
            return (bytes(body), trailers_end + 4) if trailers_end >= 0 else None
        if len(buffer) < eol + 2 + size + 2:
            return None
        body += buffer[eol + 2:eol + 2 + size]
        at = eol + 2 + size + 2


def response(status: int, body: bytes, content_type: str, close: bool) -> bytes:
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n")
    return head.encode("latin-1") + body
