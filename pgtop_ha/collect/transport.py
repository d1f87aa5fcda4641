"""A lean httpx transport for small GETs: one connection per request, read to end, no pool.

Patroni's REST server speaks HTTP/1.0 and closes every connection, so a pool buys nothing;
httpx's default transport costs ~1.9 ms CPU per such request here, this one ~0.5 ms
(docs/benchmarks.md). It can only send GET: anything else raises before a socket is opened.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import httpx

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
_HOP_HEADERS = frozenset({b"transfer-encoding", b"connection", b"keep-alive"})


def _timeout(request: httpx.Request) -> tuple[float | None, float | None]:
    spec: dict[str, Any] = request.extensions.get("timeout") or {}
    return spec.get("connect"), spec.get("read")


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    rest = body
    while rest:
        size_line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            raise httpx.RemoteProtocolError("chunked body cut short")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise httpx.RemoteProtocolError("bad chunk size") from None
        if size == 0:
            return bytes(out)
        if len(rest) < size + 2:
            raise httpx.RemoteProtocolError("chunked body cut short")
        out += rest[:size]
        rest = rest[size + 2 :]
    raise httpx.RemoteProtocolError("chunked body without its last chunk")


def parse_response(raw: bytes, request: httpx.Request) -> httpx.Response:
    """An httpx.Response from a whole HTTP/1.x answer read to EOF."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise httpx.RemoteProtocolError("no complete HTTP header", request=request)
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError("not an HTTP status line", request=request)
    headers: list[tuple[bytes, bytes]] = []
    chunked = False
    length: int | None = None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        key = name.strip().lower()
        value = value.strip()
        if key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif key == b"content-length" and value.isdigit():
            length = int(value)
        if key not in _HOP_HEADERS:
            headers.append((name.strip(), value))
    if chunked:
        body = _dechunk(body)
    elif length is not None:
        if len(body) < length:
            raise httpx.RemoteProtocolError("body shorter than Content-Length", request=request)
        body = body[:length]
    return httpx.Response(int(parts[1]), headers=headers, content=body, request=request)


class LeanGetTransport(httpx.AsyncBaseTransport):
    """GET over a fresh connection per request (``Connection: close``), TLS verified by default."""

    def __init__(self, verify: ssl.SSLContext | bool = True) -> None:
        if verify is True:
            self._ssl: ssl.SSLContext | None = ssl.create_default_context()
        elif verify is False:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            self._ssl = ctx
        else:
            self._ssl = verify

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one GET and read the whole answer."""
        if request.method != "GET":
            raise httpx.UnsupportedProtocol(f"this transport sends GET only, not {request.method}")
        url = request.url
        tls = url.scheme == "https"
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        host = url.host
        port = url.port or (443 if tls else 80)
        connect_s, read_s = _timeout(request)
        target = url.raw_path.decode("ascii")
        lines = [f"GET {target} HTTP/1.1", f"Host: {url.netloc.decode('ascii')}"]
        for name, value in request.headers.multi_items():
            if name.lower() not in ("host", "connection", "accept-encoding"):
                lines.append(f"{name}: {value}")
        lines += ["Connection: close", "", ""]
        try:
            async with asyncio.timeout(connect_s):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=self._ssl if tls else None,
                    server_hostname=host if tls else None,
                    limit=MAX_RESPONSE_BYTES,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out", request=request) from None
        except ssl.SSLError as exc:
            raise httpx.ConnectError(f"TLS: {exc.reason or exc}", request=request) from None
        except ConnectionRefusedError:
            raise httpx.ConnectError("connection refused", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(exc.strerror or str(exc), request=request) from None
        try:
            async with asyncio.timeout(read_s):
                writer.write("\r\n".join(lines).encode("latin-1"))
                await writer.drain()
                chunks: list[bytes] = []
                size = 0
                while True:
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise httpx.RemoteProtocolError("answer too large", request=request)
                    chunks.append(chunk)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no answer from {host}:{port}", request=request) from None
        except OSError as exc:
            raise httpx.ReadError(exc.strerror or str(exc), request=request) from None
        finally:
            # Not awaiting wait_closed: a frozen peer must not hold us in a TLS shutdown.
            writer.close()
        return parse_response(b"".join(chunks), request)
