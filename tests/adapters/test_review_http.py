"""The webhook's HTTP/1.1 as a peer on the network meets it (review_http.py, h11's parser, and
admission_server.py's limits): a review comes out whole however its bytes are split, kept-alive
connections are answered in order, and what is not well-framed HTTP within the API server's own
limits is refused with a 4xx and the connection closed, or closed once its time is up. Each bad
input below once froze the operator, was answered as a review, or held a connection forever."""
from __future__ import annotations

import select
import socket
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from homing.config import Webhook

from .wire import BODY, ServerThread, chunked, responses, review, sized, talk

# Short enough for a test, far apart enough to tell which one closed a connection.
READ, IDLE = 0.4, 1.2
FAST = Webhook(read_timeout_seconds=READ, idle_timeout_seconds=IDLE)
WAIT = 4.0  # how long a test waits for an answer that takes milliseconds (two cores, shared)
SLACK = 0.6  # the server's timer granularity and a busy machine


@pytest.fixture
def server():
    with ServerThread(limits=FAST) as s:
        yield s


def answered(port: int, data: bytes) -> dict:
    """A valid review on a new connection gets its answer: the server still serves."""
    got = talk(port, data, wait=WAIT, expect=1)
    assert [r.status for r in got.responses] == [200], got
    return got.responses[0].json()


def padded(size: int) -> bytes:
    """A valid review of exactly `size` bytes (JSON allows the spaces)."""
    return BODY[:-1] + b" " * (size - len(BODY)) + b"}"


# --- what the API server sends, answered -------------------------------------------------------

@pytest.mark.parametrize("data", [sized(), chunked()], ids=["sized", "chunked"])
@pytest.mark.parametrize("split", [None, 1, 7, 64])
def test_a_review_is_answered_however_its_bytes_are_split(server, data: bytes, split: int | None):
    pieces = [data[i:i + split] for i in range(0, len(data), split)] if split else [data]
    got = talk(server.port, pieces, wait=WAIT, pause=0.001 if split and split > 1 else 0.0, expect=1)
    (response,) = got.responses
    assert response.status == 200 and response.json()["response"] == {
        "uid": "u-1", "allowed": True, "warnings": ["seen by kopf's function"]}
    assert response.headers["content-type"] == "application/json"


def test_reviews_kept_alive_on_one_connection_are_answered_in_order(server):
    bodies = [orjson.dumps(review(f"u-{i}")) for i in range(3)]
    data = sized(bodies[0]) + chunked(bodies[1]) + sized(bodies[2])
    got = talk(server.port, [data[i:i + 5] for i in range(0, len(data), 5)], wait=WAIT, expect=3)
    assert [r.json()["response"]["uid"] for r in got.responses] == ["u-0", "u-1", "u-2"]


def test_trailers_after_the_last_chunk_are_read_past(server):
    data = chunked()[:-2] + b"X-Trailer: 1\r\n\r\n" + sized()
    assert [r.status for r in talk(server.port, data, wait=WAIT, expect=2).responses] == [200, 200]


@pytest.mark.parametrize(("head", "closes"), [
    (b"Connection: close\r\n", True),
    (b"Connection: keep-alive\r\n", False),
])
def test_the_client_says_whether_the_connection_ends(server, head: bytes, closes: bool):
    got = talk(server.port, sized(extra=head), wait=IDLE - 0.3)  # long enough for a close, short of the idle timeout
    assert [r.status for r in got.responses] == [200]
    assert got.closed is closes


def test_an_http_1_0_client_is_answered_and_the_connection_ends(server):
    """HTTP/1.0 is answered and closed (h11 keeps no HTTP/1.0 connection alive; the API server speaks 1.1)."""
    got = talk(server.port, sized().replace(b"HTTP/1.1", b"HTTP/1.0", 1), wait=WAIT)
    assert [r.status for r in got.responses] == [200] and got.closed


def test_the_largest_review_the_api_server_sends_is_answered(server):
    """The API server takes requests of up to 3 MiB; a review of that size still fits."""
    got = talk(server.port, sized(padded(3 * 1024 * 1024)), wait=WAIT, expect=1)
    assert [r.status for r in got.responses] == [200]


# --- what it never sends, refused --------------------------------------------------------------

MINUS_6 = b"POST /homing-pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\n"  # the 62 bytes that froze the operator
HEAD_ONLY = b"POST /homing-pods HTTP/1.1\r\nHost: homing\r\nContent-Type: application/json\r\n"

REFUSED = {  # what is sent, the status it gets
    "chunk-size-minus-6-no-host": (MINUS_6, 400),
    "chunk-size-minus-6": (MINUS_6.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nHost: homing\r\n"), 400),
    "chunk-size-plus": (chunked(sizes=[b"+a", b"+%x" % (len(BODY) - 10)]), 400),
    "chunk-size-0x": (chunked(sizes=[b"0xa", b"0x%x" % (len(BODY) - 10)]), 400),
    "chunk-size-underscore": (chunked(sizes=[b"0_a", b"0_%x" % (len(BODY) - 10)]), 400),
    "chunk-size-space-inside": (chunked(sizes=[b"0 a", b"%x" % (len(BODY) - 10)]), 400),
    "chunk-size-not-hex": (chunked(sizes=[b"zz", b"%x" % (len(BODY) - 10)]), 400),
    "conflicting-content-length": (sized(extra=b"Content-Length: 3\r\n"), 400),
    "content-length-and-chunked": (
        chunked().replace(b"Transfer-Encoding", b"Content-Length: %d\r\nTransfer-Encoding" % len(BODY)), 400),
    "two-transfer-encodings": (
        chunked().replace(b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: chunked\r\n" * 2), 400),
    "content-length-signed": (sized().replace(b"Content-Length: ", b"Content-Length: +"), 400),
    "content-length-negative": (HEAD_ONLY + b"Content-Length: -1\r\n\r\n", 400),
    "head-20-KiB": (sized(extra=b"X-Pad: " + b"a" * 20 * 1024 + b"\r\n"), 431),
    "head-100-KiB": (sized(extra=b"X-Pad: " + b"a" * 100 * 1024 + b"\r\n"), 431),
    "head-that-never-ends": (HEAD_ONLY + b"X-Pad: " + b"a" * 70_000, 431),
    "headers-200": (sized(extra=b"".join(b"X-%d: 1\r\n" % i for i in range(200))), 431),
    "body-over-3-MiB-by-content-length": (HEAD_ONLY + b"Content-Length: %d\r\n\r\n" % (3 * 1024 * 1024 + 1), 413),
    "a-header-without-a-colon": (sized(extra=b"no colon here\r\n"), 400),
    "not-http-1": (b"POST /homing-pods SPDY/3\r\nHost: homing\r\n\r\n", 400),
    "not-http-at-all": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64 + b"\r\n\r\n", 400),
    "a-get": (b"GET /homing-pods HTTP/1.1\r\nHost: homing\r\n\r\n", 405),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("data", "status"), REFUSED.values(), ids=REFUSED.keys())
def test_a_request_that_is_not_well_framed_http_is_refused_and_its_connection_closed(server, data: bytes, status: int):
    got = talk(server.port, data, wait=WAIT)
    assert [r.status for r in got.responses] == [status], got
    assert got.closed and got.closed_after is not None and got.closed_after < 1.0, got
    answered(server.port, sized())


@pytest.mark.timeout(60)
def test_a_chunked_body_over_3_mib_is_refused_before_it_ends(server):
    body = padded(3 * 1024 * 1024 + 64 * 1024)
    head = b"POST /homing-pods HTTP/1.1\r\nHost: homing\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = [head] + [b"%x\r\n" % len(body[i:i + 65536]) + body[i:i + 65536] + b"\r\n" for i in range(0, len(body), 65536)]
    got = talk(server.port, pieces + [b"0\r\n\r\n"], wait=WAIT)
    # Refused as the limit is crossed: the answer is a 413, or lost to the reset of a
    # connection closed while the client still sent; never a review answered.
    assert all(r.status == 413 for r in got.responses) and got.closed, got
    answered(server.port, sized())


CHUNKED_HEAD = b"POST /homing-pods HTTP/1.1\r\nHost: homing\r\nTransfer-Encoding: chunked\r\n\r\n"
WASTE = {
    # h11 spends microseconds on each chunk: a megabyte of one-byte chunks held the loop for seconds
    "a-body-in-one-byte-chunks": CHUNKED_HEAD + b"1\r\n \r\n" * 200_000,
    # chunk extensions carry nothing, and their bytes count against the request's
    "chunk-extensions": CHUNKED_HEAD + (b"1;" + b"e" * 8000 + b"\r\n \r\n") * 500,
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("data", WASTE.values(), ids=WASTE.keys())
def test_a_body_framed_to_waste_the_servers_time_is_refused_early(server, data: bytes):
    got = talk(server.port, [data[i:i + 65536] for i in range(0, len(data), 65536)], wait=WAIT)
    assert all(r.status == 413 for r in got.responses) and got.closed, got
    started = time.monotonic()
    answered(server.port, sized())
    assert time.monotonic() - started < 1.0


# --- time and room: a peer holds nothing for long ----------------------------------------------

SLOW = {
    "silent-from-the-start": [],
    "half-a-head": [HEAD_ONLY],
    "a-head-without-its-body": [sized()[:-5]],
    "half-a-chunked-body": [chunked()[:-12]],
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pieces", SLOW.values(), ids=SLOW.keys())
def test_a_request_that_stops_coming_is_closed_after_the_read_timeout(server, pieces: list[bytes]):
    started = time.monotonic()
    got = talk(server.port, pieces or [b""], wait=WAIT)
    assert got.closed, got
    assert READ - 0.1 <= time.monotonic() - started < READ + SLACK  # it waited for the rest, then no longer
    assert got.responses == []  # closed unanswered: the request never came whole
    answered(server.port, sized())


@pytest.mark.timeout(30)
def test_a_request_dribbled_a_byte_at_a_time_is_closed_after_the_read_timeout(server):
    """The read timeout runs from the request's first byte: bytes that keep coming do not renew it."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
    started, ended = time.monotonic(), None
    try:
        for byte in sized()[:-1]:
            try:
                sock.sendall(bytes([byte]))
                if select.select([sock], [], [], 0.05)[0] and sock.recv(1 << 16) == b"":
                    ended = time.monotonic()
            except (BrokenPipeError, ConnectionResetError):
                ended = time.monotonic()
            if ended is not None or time.monotonic() - started > WAIT:
                break
    finally:
        sock.close()
    assert ended is not None and ended - started < READ + SLACK


@pytest.mark.timeout(30)
def test_a_kept_alive_connection_is_closed_after_the_idle_timeout_not_the_read_timeout(server):
    got = talk(server.port, sized(), wait=WAIT)
    assert [r.status for r in got.responses] == [200] and got.closed
    assert IDLE - 0.1 <= got.closed_after < IDLE + SLACK, got


@pytest.mark.timeout(30)
def test_connections_beyond_the_cap_are_closed_at_once_and_the_server_serves_again_below_it():
    with ServerThread(limits=Webhook(read_timeout_seconds=5.0, idle_timeout_seconds=IDLE, max_connections=3)) as s:
        held = [socket.create_connection(("127.0.0.1", s.port), timeout=WAIT) for _ in range(3)]
        try:
            time.sleep(0.2)  # the three accepted
            got = talk(s.port, sized(), wait=2.0)
            assert got.closed and got.responses == [] and got.closed_after < 1.0, got
            held.pop().close()
            time.sleep(0.2)
            answered(s.port, sized())
        finally:
            for sock in held:
                sock.close()


@pytest.mark.timeout(30)
def test_a_connection_that_sent_its_byte_cap_is_closed_after_the_answer_in_progress():
    request = sized(padded(2048))
    limits = Webhook(read_timeout_seconds=READ, idle_timeout_seconds=IDLE, max_connection_bytes=len(request) * 3 // 2)
    with ServerThread(limits=limits) as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=WAIT)
        try:
            raw = b""
            for _ in range(3):
                try:
                    sock.sendall(request)
                except (BrokenPipeError, ConnectionResetError):
                    break
                time.sleep(0.2)
                try:
                    chunk = sock.recv(1 << 16)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                raw += chunk
            out, _ = responses(raw)
            statuses = [(r.status, r.headers.get("connection")) for r in out]
        finally:
            sock.close()
    assert statuses == [(200, None), (200, "close")]


# --- any bytes, split anywhere: never a loop, never a connection held, still serving -----------

GOOD = [sized(), chunked(), sized(target="/homing-pods")]
BAD_LINES = [b"-6", b"+2", b"0x2", b"0_2", b" ", b"zz", b"f" * 30, b"1;" + b"x" * 100, b""]


@st.composite
def streams(draw) -> list[bytes]:
    """A connection's bytes: valid reviews and broken ones, cut at random points."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["good", "size", "cut", "junk", "header"]))
        if kind == "good":
            parts.append(draw(st.sampled_from(GOOD)))
        elif kind == "size":
            line = draw(st.sampled_from(BAD_LINES))
            parts.append(chunked(sizes=[line, b"%x" % (len(BODY) - 10)]))
        elif kind == "cut":
            good = draw(st.sampled_from(GOOD))
            parts.append(good[:draw(st.integers(0, len(good) - 1))])
        elif kind == "header":
            parts.append(sized(extra=draw(st.sampled_from(
                [b"Content-Length: 1\r\n", b"Transfer-Encoding: chunked\r\n", b"X: \x00\r\n", b": empty\r\n"]))))
        else:
            parts.append(draw(st.binary(min_size=1, max_size=300)))
    data = b"".join(parts)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=6))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)]) if data[a:b]]


SHARED_READ, SHARED_IDLE = 0.25, 0.4


@pytest.fixture(scope="module")
def shared_server():
    with ServerThread(limits=Webhook(read_timeout_seconds=SHARED_READ, idle_timeout_seconds=SHARED_IDLE)) as s:
        yield s


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pieces=streams())
def test_any_bytes_split_anywhere_are_answered_or_closed_within_the_timeouts(shared_server, pieces: list[bytes]):
    got = talk(shared_server.port, pieces, wait=SHARED_READ + SHARED_IDLE + 2 * SLACK, pause=0.002)
    assert got.closed, f"still open after the timeouts: {got}"
    assert got.closed_after < max(SHARED_READ, SHARED_IDLE) + SLACK, got
    assert got.unparsed == b"", got
    for r in got.responses:
        assert r.status in (200, 400, 404, 405, 408, 413, 431), r
        if r.status == 200:
            assert r.json()["response"]["allowed"] is True
    answered(shared_server.port, sized())


# --- the parser alone: the same requests whatever the reads --------------------------------------

def _read(pieces: list[bytes]) -> list:
    """What review_http makes of a connection's bytes fed in these pieces, answering each request as the server does."""
    from homing.kube.admission.review_http import Exchange, Limits, Refusal

    exchange, out = Exchange(Limits(head_bytes=16 * 1024, headers=64, body_bytes=64 * 1024)), []
    for piece in pieces:
        exchange.feed(piece)
        while (item := exchange.next()) is not None:
            if isinstance(item, Refusal):  # its reason quotes what h11 had read: the status is what counts
                return [*out, ("refused", item.status)]
            out.append(item)
            exchange.answer(200, b"{}", "application/json", close=False)
            if not exchange.next_cycle():
                return out
    return out


@settings(max_examples=300, deadline=None)
@given(pieces=streams())
def test_the_parser_hands_out_the_same_requests_however_the_bytes_are_split(pieces: list[bytes]):
    whole = _read([b"".join(pieces)])
    assert _read(pieces) == whole
    assert _read([bytes([b]) for b in b"".join(pieces)]) == whole
