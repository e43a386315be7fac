"""The webhook's HTTP/1.1, bytes in and requests out (review_http.py): whole requests however
the bytes are split, keep-alive and close, chunked bodies, and the requests it refuses."""
from __future__ import annotations

import pytest

from homing.kube.review_http import BadRequest, RequestReader, response

BODY = b'{"kind": "AdmissionReview"}'
SIZED = b"POST /homing-pods HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
CHUNKED = (b"POST /homing-pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"a\r\n" + BODY[:10] + b"\r\n" + b"%x;ext=1\r\n" % (len(BODY) - 10) + BODY[10:] + b"\r\n0\r\n\r\n")


def read_all(data: bytes, split: int | None = None, max_body: int = 1 << 20) -> list:
    reader, out = RequestReader(max_body), []
    pieces = [data[i:i + split] for i in range(0, len(data), split)] if split else [data]
    for piece in pieces:
        reader.feed(piece)
        while (request := reader.next()) is not None:
            out.append(request)
    return out


@pytest.mark.parametrize("data", [SIZED, CHUNKED], ids=["sized", "chunked"])
@pytest.mark.parametrize("split", [None, 1, 7, 64])
def test_a_request_comes_out_whole_however_its_bytes_are_split(data: bytes, split: int | None) -> None:
    (request,) = read_all(data, split)
    assert (request.method, request.path, request.body, request.close) == ("POST", "/homing-pods", BODY, False)
    assert request.header("content-type") in ("application/json", None)


def test_requests_kept_alive_on_one_connection_come_out_in_order() -> None:
    second = SIZED.replace(b"/homing-pods", b"/other")
    assert [r.path for r in read_all(SIZED + CHUNKED + second, split=5)] == ["/homing-pods", "/homing-pods", "/other"]


def test_the_path_comes_without_the_query_the_api_server_adds() -> None:
    (request,) = read_all(SIZED.replace(b"/homing-pods", b"/homing-pods?timeout=2s"))
    assert request.path == "/homing-pods"


def test_trailers_after_the_last_chunk_are_read_past() -> None:
    data = CHUNKED[:-2] + b"X-Trailer: 1\r\n\r\n" + SIZED
    assert [r.body for r in read_all(data)] == [BODY, BODY]


@pytest.mark.parametrize(("head", "close"), [
    (b"POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", True),
    (b"POST / HTTP/1.1\r\nconnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", False),
    (b"POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n", True),
    (b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", False),
])
def test_the_client_says_whether_the_connection_ends(head: bytes, close: bool) -> None:
    (request,) = read_all(head)
    assert request.close is close and request.body == b""


@pytest.mark.parametrize(("data", "status"), [
    (b"GET /homing-pods HTTP/1.1\r\n\r\n", 405),
    (b"POST /homing-pods HTTP/1.1\r\nContent-Length: 99999\r\n\r\n", 413),
    (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffff\r\n", 413),
    (b"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
    (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    (b"POST /x SPDY/3\r\n\r\n", 400),
    (b"POST /x HTTP/1.1\r\nno colon here\r\n\r\n", 400),
    (b"POST /x HTTP/1.1\r\n" + b"X: " + b"y" * 70000, 431),
])
def test_a_request_that_cannot_be_answered_is_refused_with_its_status(data: bytes, status: int) -> None:
    with pytest.raises(BadRequest) as err:
        read_all(data, max_body=1000)
    assert err.value.status == status


def test_an_incomplete_request_waits_for_more_bytes() -> None:
    assert read_all(SIZED[:-1]) == []
    assert read_all(CHUNKED[:-3]) == []


def test_a_response_says_its_length_and_whether_the_connection_ends() -> None:
    assert response(200, b"{}", "application/json", close=False) == \
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    assert b"Connection: close\r\n" in response(400, b"bad", "text/plain", close=True)
