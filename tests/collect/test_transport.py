"""The lean GET transport: HTTP/1.x answers parsed whole, GET only, errors as httpx errors."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect.transport import LeanGetTransport, parse_response

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
