"""Hostile HTTP servers (and an HAProxy stats socket) against the read path.

Each case asserts the bounded outcome: the memory it may take, the time it may take, the one-line
message the user sees, and what the server was sent. The servers are fakes on loopback
(tests/hostile/fakes.py) that do what a real server cannot do on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import resource
import struct
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from pgtop_ha.collect import haproxy
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.http import GetOnlyClient, Redirected, RefusedAnswer
from pgtop_ha.collect.patroni import PatroniClient, describe_http_error
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.transport import MAX_RESPONSE_BYTES
from pgtop_ha.settings import Settings
from tests.hostile.fakes import FakeServer, Handler, Received, answer, fake_server

MIB = 1 << 20
FIXTURES = Path(__file__).parent.parent / "collect" / "fixtures"
OWN = (FIXTURES / "patroni_primary.json").read_bytes()
CLUSTER = (FIXTURES / "cluster.json").read_bytes()
STATS = (FIXTURES / "haproxy_stats.csv").read_bytes()
HOLD_S = 20.0  # the longest a fake keeps a connection open; far above every limit under test


@functools.cache
def gzip_bomb(mib: int = 1024) -> bytes:
    """A valid gzip stream of ``mib`` MiB of zeros in ~1 MB (built from one repeated block)."""
    block = bytes(MIB)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    # After a full flush the compressor starts afresh, so every further block compresses the same.
    first = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    unit = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    end = comp.flush()[:-8]  # the last block; the trailer is rebuilt for the whole length
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    return first + unit * (mib - 1) + end + struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)


def test_the_bomb_is_real() -> None:
    bomb = gzip_bomb()
    inflate = zlib.decompressobj(31)
    assert len(bomb) < 2 * MIB
    assert inflate.decompress(bomb, 64 * MIB) == bytes(64 * MIB)  # and so on, to 1 GiB


# -- measuring ----------------------------------------------------------------------------------


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


@contextlib.contextmanager
def bounded_memory(limit_mib: int) -> Iterator[None]:
    """Fail if the process's peak or current RSS grew by ``limit_mib`` MiB or more inside the block."""
    proc = psutil.Process()
    peak, now = _peak_rss(), proc.memory_info().rss
    yield
    grew_peak = (_peak_rss() - peak) / MIB
    grew_now = (proc.memory_info().rss - now) / MIB
    assert grew_peak < limit_mib, f"peak RSS grew by {grew_peak:.0f} MiB"
    assert grew_now < limit_mib, f"RSS grew by {grew_now:.0f} MiB"


class Stopwatch:
    """Wall time of a block."""

    elapsed = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.monotonic()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.elapsed = time.monotonic() - self._start


# -- hostile handlers ---------------------------------------------------------------------------


async def _until_client_closes(got: Received, closed: asyncio.Event | None = None) -> None:
    assert got.reader is not None
    with contextlib.suppress(TimeoutError, ConnectionError):
        async with asyncio.timeout(HOLD_S):
            while await got.reader.read(65536):
                pass
            if closed is not None:
                closed.set()


def raw(data: bytes, *, hold: bool = False, closed: asyncio.Event | None = None) -> Handler:
    """Send ``data`` as is; with ``hold``, keep the connection open until the client hangs up."""

    async def handle(got: Received, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        if hold:
            await _until_client_closes(got, closed)

    return handle


def stream(head: bytes, piece: bytes, total: int, sent: list[int]) -> Handler:
    """Send ``head``, then ``piece`` again and again up to ``total`` bytes (``sent[0]``: so far)."""

    async def handle(_got: Received, writer: asyncio.StreamWriter) -> None:
        writer.write(head)
        while sent[0] < total:
            writer.write(piece)
            await writer.drain()  # raises once the client has hung up
            sent[0] += len(piece)

    return handle


def drip(data: bytes, every_s: float) -> Handler:
    """Send ``data`` one byte every ``every_s`` seconds, then keep dripping spaces."""

    async def handle(_got: Received, writer: asyncio.StreamWriter) -> None:
        padded = data + b" " * int(HOLD_S / every_s)
        for i in range(len(padded)):
            writer.write(padded[i : i + 1])
            await writer.drain()
            await asyncio.sleep(every_s)  # the server's behaviour, not synchronisation

    return handle


def _json_head(extra: str = "", *, status: str = "200 OK") -> str:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"


@contextlib.asynccontextmanager
async def patroni_client(limit_s: float = 2.0) -> AsyncIterator[PatroniClient]:
    """A PatroniClient over the read path's own GET-only client."""
    http = GetOnlyClient(timeout=limit_s)
    try:
        yield PatroniClient(http, limit_s)
    finally:
        await http.aclose()


async def _own_error(server: FakeServer, limit_s: float = 2.0) -> tuple[Exception, str]:
    """What asking the fake's /patroni raised, and the line the user would see."""
    url = f"{server.url}/patroni"
    async with patroni_client(limit_s) as client:
        try:
            await client.own(url)
        except Exception as exc:  # what the poller's describer gets
            return exc, describe_http_error(exc, url)
    raise AssertionError("the hostile answer was accepted")


# -- memory: gzip bomb, huge bodies ----------------------------------------------------------------


@pytest.mark.parametrize("framing", ["length", "chunked", "eof"])
async def test_gzip_bomb_is_refused_unread(framing: str) -> None:
    bomb = gzip_bomb()
    heads = {
        "length": f"Content-Length: {len(bomb)}\r\n",
        "chunked": "Transfer-Encoding: chunked\r\n",
        "eof": "Connection: close\r\n",
    }
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(bomb), bomb) if framing == "chunked" else bomb
    head = _json_head(f"Content-Encoding: gzip\r\n{heads[framing]}\r\n").encode()
    async with fake_server({"/patroni": raw(head + body)}) as server:
        with bounded_memory(32), Stopwatch() as took:
            exc, line = await _own_error(server)
    assert isinstance(exc, RefusedAnswer)
    assert line == f"{server.url}/patroni: compressed answer refused (Content-Encoding: gzip)"
    assert took.elapsed < 1.0
    assert server.received[0].headers["accept-encoding"] == "identity"
    assert "authorization" not in server.received[0].headers


async def test_gzip_bomb_on_the_haproxy_stats_page() -> None:
    head = b"HTTP/1.0 200 OK\r\nContent-Type: text/csv\r\nContent-Encoding: gzip\r\n\r\n"
    async with fake_server({"/stats": raw(head + gzip_bomb())}) as server:
        http = GetOnlyClient(timeout=2)
        try:
            with bounded_memory(32), pytest.raises(RefusedAnswer, match="compressed answer refused"):
                await haproxy.fetch_http(http, f"{server.url}/stats", 2)
        finally:
            await http.aclose()


@pytest.mark.parametrize("framing", ["announced", "eof", "chunked"])
async def test_huge_body_is_cut_at_the_cap(framing: str) -> None:
    total = 256 * MIB
    sent = [0]
    piece = b"a" * 65536
    if framing == "announced":
        head, unit = _json_head(f"Content-Length: {total}\r\n\r\n"), piece
    elif framing == "eof":
        head, unit = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n", piece
    else:
        head, unit = _json_head("Transfer-Encoding: chunked\r\n\r\n"), b"%x\r\n%s\r\n" % (len(piece), piece)
    async with fake_server({"/patroni": stream(head.encode(), unit, total, sent)}) as server:
        with bounded_memory(64), Stopwatch() as took:
            exc, line = await _own_error(server, limit_s=10)
    assert isinstance(exc, RefusedAnswer)
    assert "answer too large" in line and "RemoteProtocolError" not in line
    assert took.elapsed < 5.0
    # The client hung up near the cap, not after the server's 256 MiB.
    assert sent[0] < MAX_RESPONSE_BYTES + 32 * MIB


# -- time: slow drip, keep-alive ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["head", "body"])
async def test_slow_drip_is_cut_at_the_timeout(where: str) -> None:
    whole = _json_head(f"Content-Length: {len(OWN)}\r\n\r\n").encode() + OWN
    split = whole.index(b"\r\n\r\n") + 4 if where == "body" else 10
    handler = _prefix_then(whole[:split], drip(whole[split:], 0.05))
    async with fake_server({"/patroni": handler}) as server:
        with Stopwatch() as took:
            exc, line = await _own_error(server, limit_s=0.5)
    assert isinstance(exc, httpx.ReadTimeout)
    assert line == f"{server.url}/patroni: no answer (timeout)"
    # The whole answer gets the timeout, not each byte: a drip cannot keep it going.
    assert 0.4 < took.elapsed < 1.5


def _prefix_then(prefix: bytes, then: Handler) -> Handler:
    async def handle(got: Received, writer: asyncio.StreamWriter) -> None:
        writer.write(prefix)
        await writer.drain()
        await then(got, writer)

    return handle


@pytest.mark.parametrize("framing", ["length", "chunked"])
async def test_keep_alive_server_is_not_waited_for(framing: str) -> None:
    if framing == "length":
        data = _json_head(f"Content-Length: {len(OWN)}\r\nConnection: keep-alive\r\n\r\n").encode() + OWN
    else:
        half = len(OWN) // 2
        chunks = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, OWN[:half], len(OWN) - half, OWN[half:])
        data = _json_head("Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n").encode() + chunks
    closed = asyncio.Event()
    async with fake_server({"/patroni": raw(data, hold=True, closed=closed)}) as server:
        async with patroni_client(limit_s=5) as client:
            with Stopwatch() as took:
                own = await client.own(f"{server.url}/patroni")
        # We hung up ourselves: the server never closes.
        async with asyncio.timeout(2):
            await closed.wait()
    assert own.role == json.loads(OWN)["role"]
    assert took.elapsed < 0.5  # the timeout is 5 s


# -- HTTP as it is: 1xx, chunked, LF-only, redirects, conflicting lengths ------------------------


async def test_informational_answers_before_the_real_one() -> None:
    data = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        + _json_head(f"Content-Length: {len(OWN)}\r\n\r\n").encode()
        + OWN
    )
    async with fake_server({"/patroni": raw(data)}) as server, patroni_client() as client:
        own = await client.own(f"{server.url}/patroni")
    assert (own.role, own.state) == (json.loads(OWN)["role"], json.loads(OWN)["state"])


async def test_chunked_answer_in_odd_pieces() -> None:
    pieces = [CLUSTER[i : i + 7] for i in range(0, len(CLUSTER), 7)]
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\nX-Trailer: 1\r\n\r\n"
    data = _json_head("Transfer-Encoding: chunked\r\n\r\n").encode() + body
    async with fake_server({"/cluster": raw(data)}) as server, patroni_client() as client:
        view = await client.cluster(server.url)
    assert [m.name for m in view.members] == [m["name"] for m in json.loads(CLUSTER)["members"]]


async def test_lf_only_header_lines() -> None:
    data = b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: %d\n\n" % len(OWN) + OWN
    async with fake_server({"/patroni": raw(data)}) as server, patroni_client() as client:
        own = await client.own(f"{server.url}/patroni")
    assert own.role == json.loads(OWN)["role"]


async def test_conflicting_content_length_is_an_error_not_a_truncation() -> None:
    data = _json_head(f"Content-Length: 5\r\nContent-Length: {len(OWN)}\r\n\r\n").encode() + OWN
    async with fake_server({"/patroni": raw(data)}) as server:
        exc, line = await _own_error(server)
    assert isinstance(exc, httpx.RemoteProtocolError)
    assert "conflicting Content-Length" in line


@pytest.mark.parametrize(
    ("status", "location", "shown"),
    [
        ("301 Moved Permanently", "http://10.0.0.5:8008/patroni", "http://10.0.0.5:8008/patroni"),
        ("302 Found", "/elsewhere/patroni", "{url}/elsewhere/patroni"),
        (
            "307 Temporary Redirect",
            "http://admin:secret@10.0.0.6:8008/patroni",
            "http://***@10.0.0.6:8008/patroni",
        ),
        ("308 Permanent Redirect", None, "nowhere (no Location)"),
    ],
    ids=["absolute", "relative", "credentials", "no-location"],
)
async def test_redirect_is_reported_as_a_redirect(status: str, location: str | None, shown: str) -> None:
    headers = {"Location": location} if location else {}
    async with fake_server({"/patroni": answer(b"moved", status, headers)}) as server:
        exc, line = await _own_error(server)
    code = status.split()[0]
    assert isinstance(exc, Redirected)
    target = shown.format(url=server.url)
    assert line == f"{server.url}/patroni: redirected to {target} (HTTP {code}); give the final URL"
    assert "secret" not in line and "JSON" not in line
    assert len(server.received) == 1  # not followed


async def test_redirect_on_the_haproxy_stats_page() -> None:
    routes = {"/stats": answer(b"", "301 Moved Permanently", {"Location": "/haproxy?stats"})}
    async with fake_server(routes) as server:
        http = GetOnlyClient(timeout=2)
        try:
            with pytest.raises(
                Redirected, match=r"redirected to http://127\.0\.0\.1:\d+/haproxy\?stats \(HTTP 301\)"
            ):
                await haproxy.fetch_http(http, f"{server.url}/stats", 2)
        finally:
            await http.aclose()


# -- the HAProxy stats socket -------------------------------------------------------------------


@contextlib.asynccontextmanager
async def streaming_socket(total: int, sent: list[int]) -> AsyncIterator[Path]:
    """A unix socket answering ``show stat`` with a header and then rows, up to ``total`` bytes."""
    header, rows = STATS.split(b"\n", 1)
    piece = rows * (65536 // len(rows) + 1)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            await reader.readline()
            writer.write(header + b"\n")
            while sent[0] < total:
                writer.write(piece)
                await writer.drain()
                sent[0] += len(piece)
        writer.close()

    with tempfile.TemporaryDirectory(prefix="pgtopha-sock-") as tmp:
        path = Path(tmp) / "stats.sock"
        server = await asyncio.start_unix_server(serve, str(path))
        try:
            yield path
        finally:
            server.close()


async def test_haproxy_socket_streaming_600_mib_is_bounded() -> None:
    sent = [0]
    async with streaming_socket(600 * MIB, sent) as path:
        with bounded_memory(64), Stopwatch() as took, pytest.raises(ParseError) as caught:
            await haproxy.fetch_socket(path)
    assert str(caught.value) == "haproxy stats socket: answer too large (over 8 MiB)"
    assert sent[0] < 8 * MIB + 32 * MIB
    assert took.elapsed < 5.0


async def test_haproxy_socket_small_answer_still_read_whole() -> None:
    sent = [0]
    async with streaming_socket(3 * 65536, sent) as path:
        text = await haproxy.fetch_socket(path)
    assert text.startswith("# pxname,") and text.endswith("\n")
    assert len(haproxy.parse_stat_csv(text)) > 100


# -- the whole poller keeps running and reports hostile answers as data ----------------------------


async def _cycles(settings: Settings, count: int = 3) -> list[tuple[str, ...]]:
    poller = Poller.from_settings(settings)
    seen: list[tuple[str, ...]] = []
    try:
        for _ in range(count):
            snap = await poller.cycle(budget=3)
            seen.append((*snap.errors, snap.haproxy.error or ""))
    finally:
        await poller.aclose()
    return seen


async def test_poller_reports_a_bomb_and_a_redirect_and_keeps_going() -> None:
    head = _json_head("Content-Encoding: gzip\r\nConnection: close\r\n\r\n").encode()
    routes = {
        "/cluster": raw(head + gzip_bomb()),
        "/stats": answer(b"", "302 Found", {"Location": "https://lb.example/stats"}),
    }
    async with fake_server(routes) as server:
        settings = Settings(
            patroni={"urls": (server.url,), "timeout": 1.0},
            haproxy={"url": f"{server.url}/stats", "timeout": 1.0},
        )
        with bounded_memory(48):
            seen = await _cycles(settings)
    assert len(seen) == 3
    for errors in seen:
        text = " | ".join(errors)
        assert f"{server.url}/cluster: compressed answer refused (Content-Encoding: gzip)" in text
        assert "redirected to https://lb.example/stats (HTTP 302); give the final URL" in text
    assert all(r.headers.get("accept-encoding") == "identity" for r in server.received)


async def test_poller_reports_a_huge_cluster_and_a_flooding_socket() -> None:
    sent_http, sent_sock = [0], [0]
    head = _json_head(f"Content-Length: {64 * MIB}\r\n\r\n").encode()
    routes = {"/cluster": stream(head, b"[" * 65536, 64 * MIB, sent_http)}
    async with fake_server(routes) as server, streaming_socket(600 * MIB, sent_sock) as sock:
        settings = Settings(
            patroni={"urls": (server.url,), "timeout": 2.0},
            haproxy={"socket": sock, "timeout": 2.0},
        )
        with bounded_memory(64):
            seen = await _cycles(settings, count=2)
    for errors in seen:
        text = " | ".join(errors)
        assert f"{server.url}/cluster: answer too large" in text
        assert "haproxy stats socket: answer too large (over 8 MiB)" in text
