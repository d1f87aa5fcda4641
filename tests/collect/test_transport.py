"""The lean GET transport: HTTP/1.x answers parsed by h11, bounded, GET only, errors as httpx errors."""

from __future__ import annotations

import asyncio
import gzip
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect.transport import (
    MAX_RESPONSE_BYTES,
    MAX_WIRE_BYTES,
    AnswerParser,
    LeanGetTransport,
    RefusedAnswer,
    parse_response,
)

REQUEST = httpx.Request("GET", "http://127.0.0.1/x")


def test_http10_answer_read_to_end() -> None:
    raw = b'HTTP/1.0 200 OK\r\nServer: BaseHTTP\r\nContent-Type: application/json\r\n\r\n{"a": 1}'
    resp = parse_response(raw, REQUEST)
    assert resp.status_code == 200
    assert resp.json() == {"a": 1}
    assert resp.headers["content-type"] == "application/json"


def test_content_length_and_chunked() -> None:
    raw = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbodyEXTRA"
    resp = parse_response(raw, REQUEST)
    assert (resp.status_code, resp.content) == (503, b"body")
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n"
    assert parse_response(chunked, REQUEST).content == b"abcde"


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"garbage",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"SMTP 220 hello\r\n\r\n",
    ],
)
def test_broken_answers_are_protocol_errors(raw: bytes) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        parse_response(raw, REQUEST)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_answers(raw: bytes) -> None:
    try:
        resp = parse_response(b"HTTP/1.1 200 OK\r\n" + raw, REQUEST)
    except httpx.RemoteProtocolError:
        return
    assert resp.status_code == 200


async def test_refuses_anything_but_get_before_connecting() -> None:
    transport = LeanGetTransport()
    for method in ("POST", "PATCH", "DELETE"):
        with pytest.raises(httpx.UnsupportedProtocol, match="GET only"):
            await transport.handle_async_request(httpx.Request(method, "http://127.0.0.1:1/"))


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A server that accepts and never answers (what a SIGSTOPped peer looks like)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        held.append(w)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        for w in held:
            w.close()
        server.close()
        await server.wait_closed()


async def test_timeouts_and_refusals_are_httpx_errors(silent_server: int) -> None:
    async with httpx.AsyncClient(transport=LeanGetTransport(), timeout=0.3) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(f"http://127.0.0.1:{silent_server}/patroni")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed = sock.getsockname()[1]
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{closed}/patroni")


def _feed_in_pieces(raw: bytes, size: int) -> httpx.Response:
    parser = AnswerParser(REQUEST)
    for start in range(0, len(raw), size):
        response = parser.feed(raw[start : start + size])
        if response is not None:
            return response
    response = parser.feed(b"")
    assert response is not None
    return response


@pytest.mark.parametrize("size", [1, 2, 7, 4096])
def test_answers_arriving_in_pieces(size: int) -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
    assert _feed_in_pieces(raw, size).content == b"abcde"
    # Content-Length known: the answer is complete without EOF (a keep-alive server never sends one).
    parser = AnswerParser(REQUEST)
    response = parser.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok")
    assert response is not None and response.content == b"ok"


def test_request_asks_for_identity_and_close() -> None:
    request = httpx.Request("GET", "http://h:8008/stats;csv?x=1", headers={"Accept-Encoding": "gzip"})
    sent = AnswerParser(request).request_bytes
    assert sent.startswith(b"GET /stats;csv?x=1 HTTP/1.1\r\n")
    lowered = sent.lower()
    assert b"accept-encoding: identity\r\n" in lowered and b"gzip" not in lowered
    assert b"connection: close\r\n" in lowered and b"host: h:8008\r\n" in lowered


def test_informational_answers_are_skipped() -> None:
    raw = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    )
    resp = parse_response(raw, REQUEST)
    assert (resp.status_code, resp.content) == (200, b"{}")


def test_lf_only_header_lines_are_accepted() -> None:
    resp = parse_response(
        b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 2\n\n{}", REQUEST
    )
    assert (resp.status_code, resp.headers["content-type"], resp.json()) == (200, "application/json", {})


def test_conflicting_content_length_is_a_protocol_error() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}" + b" " * 18
    with pytest.raises(httpx.RemoteProtocolError, match="conflicting Content-Length"):
        parse_response(raw, REQUEST)
    same = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"
    assert parse_response(same, REQUEST).content == b"{}"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd", "identity, gzip", "x-gzip"])
def test_compressed_answers_are_refused_unread(coding: str) -> None:
    raw = f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: 4\r\n\r\n".encode()
    # Refused on the header alone: the body is not even waited for.
    with pytest.raises(RefusedAnswer, match="compressed answer refused"):
        AnswerParser(REQUEST).feed(raw)


def test_identity_answer_cannot_be_decoded_again() -> None:
    body = gzip.compress(b'{"a": 1}')  # gzip bytes *labelled* identity stay bytes
    raw = b"HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    resp = parse_response(raw, REQUEST)
    assert "content-encoding" not in resp.headers and "transfer-encoding" not in resp.headers
    assert resp.content == body and resp.reason_phrase == "OK" and resp.http_version == "HTTP/1.1"


def test_answer_too_large() -> None:
    announced = f"HTTP/1.1 200 OK\r\nContent-Length: {MAX_RESPONSE_BYTES + 1}\r\n\r\n".encode()
    with pytest.raises(RefusedAnswer, match="answer too large"):
        AnswerParser(REQUEST).feed(announced)
    parser = AnswerParser(REQUEST)
    assert parser.feed(b"HTTP/1.0 200 OK\r\n\r\n") is None
    block = b"x" * 65536
    for _ in range(MAX_RESPONSE_BYTES // len(block)):
        assert parser.feed(block) is None
    with pytest.raises(RefusedAnswer, match="answer too large"):
        parser.feed(b"x")
    # Exactly the cap is still an answer.
    exact = parse_response(b"HTTP/1.0 200 OK\r\n\r\n" + b"y" * MAX_RESPONSE_BYTES, REQUEST)
    assert len(exact.content) == MAX_RESPONSE_BYTES


def test_endless_informational_answers_are_bounded() -> None:
    parser = AnswerParser(REQUEST)
    block = b"HTTP/1.1 100 Continue\r\n\r\n" * 4096
    for _ in range(MAX_WIRE_BYTES // len(block)):
        assert parser.feed(block) is None
    with pytest.raises(RefusedAnswer, match="answer too large"):
        parser.feed(block)


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n",
    ],
    ids=["101", "gzip-transfer-coding", "negative-length", "no-colon", "huge-head"],
)
def test_more_broken_answers(raw: bytes) -> None:
    # In the pieces the transport reads (64 KiB): a head over 32 KiB is refused unfinished.
    with pytest.raises(httpx.RemoteProtocolError):
        _feed_in_pieces(raw, 65536)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(min_value=1, max_value=50))
def test_fuzz_pieces_agree_with_whole(raw: bytes, size: int) -> None:
    answer = b"HTTP/1.1 200 OK\r\n" + raw
    try:
        whole: httpx.Response | Exception = parse_response(answer, REQUEST)
    except httpx.RemoteProtocolError as exc:
        whole = exc
    try:
        pieces: httpx.Response | Exception = _feed_in_pieces(answer, size)
    except httpx.RemoteProtocolError as exc:
        pieces = exc
    if isinstance(whole, httpx.Response):
        assert isinstance(pieces, httpx.Response) and pieces.content == whole.content
    else:
        assert isinstance(pieces, httpx.RemoteProtocolError)
