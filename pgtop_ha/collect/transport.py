"""A lean httpx transport for small GETs: one connection per request, parsed by h11, no pool.

Patroni's REST server closes every connection, so a pool buys nothing. It sends only GET, reads
up to the answer's end, refuses a compressed answer and holds at most MAX_RESPONSE_BYTES.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable
from typing import Any

import h11
import httpx

from pgtop_ha.collect.certificate import not_after

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
# Everything read off the socket (status lines, 1xx answers, headers, chunk framing, body):
# bounds a server that sends endless 1xx answers or chunk extensions without any body.
MAX_WIRE_BYTES = 2 * MAX_RESPONSE_BYTES
# What an https server that requires a client certificate does to one without: the handshake
# completes, then it closes before any answer (TLS 1.3). The read and write paths both say it.
CLIENT_CERT_HINT = "does it require a client certificate? set certfile/keyfile"
_MAX_HEAD_BYTES = 32 * 1024  # h11 refuses an unfinished head beyond this
_READ_SIZE = 64 * 1024
# Not copied into the httpx.Response: the body handed over is de-chunked and never encoded, so
# httpx must not try to decode it again.
_DROPPED = frozenset({b"transfer-encoding", b"connection", b"keep-alive", b"content-encoding"})
_NOT_FORWARDED = frozenset({"host", "connection", "accept-encoding", "content-length", "transfer-encoding"})


class RefusedAnswer(httpx.RemoteProtocolError):
    """An answer the read path will not use (too large, compressed, redirected); says why in one line."""


def _timeout(request: httpx.Request) -> tuple[float | None, float | None]:
    spec: dict[str, Any] = request.extensions.get("timeout") or {}
    return spec.get("connect"), spec.get("read")


def _encodings(head: h11.Response) -> list[bytes]:
    found: list[bytes] = []
    for name, value in head.headers:
        if name == b"content-encoding":
            found += [token.strip().lower() for token in value.split(b",")]
    return [token for token in found if token not in (b"", b"identity")]


_END = h11.EndOfMessage()


@functools.lru_cache(maxsize=256)
def _request_event(target: bytes, headers: tuple[tuple[str, str], ...]) -> h11.Request:
    # h11 validates a request's headers each time one is built (~40 % of sending it); the read
    # path asks the same few URLs every cycle, and events are immutable, so they are reused.
    return h11.Request(method="GET", target=target, headers=list(headers))


class AnswerParser:
    """One GET exchange in h11: the request's bytes, then the answer fed in as it arrives."""

    def __init__(self, request: httpx.Request) -> None:
        self._request = request
        self._conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD_BYTES)
        self._head: h11.Response | None = None
        self._body = bytearray()
        self._wire = 0
        self._eof = False
        url = request.url
        headers = [("Host", url.netloc.decode("ascii"))]
        for name, value in request.headers.multi_items():
            if name.lower() not in _NOT_FORWARDED:
                headers.append((name, value))
        # identity: a compressed answer is refused below, never inflated (a bomb stays its wire size).
        headers += [("Accept-Encoding", "identity"), ("Connection", "close")]
        try:
            head = self._conn.send(_request_event(url.raw_path, tuple(headers)))
            end = self._conn.send(_END)
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(f"cannot send this request: {exc}", request=request) from None
        self.request_bytes = (head or b"") + (end or b"")

    def _refuse(self, why: str) -> RefusedAnswer:
        return RefusedAnswer(why, request=self._request)

    def _check_head(self, head: h11.Response) -> None:
        encodings = _encodings(head)
        if encodings:
            shown = ", ".join(e.decode("latin-1") for e in encodings)[:40]
            raise self._refuse(f"compressed answer refused (Content-Encoding: {shown})")
        for name, value in head.headers:
            if name == b"content-length" and int(value) > MAX_RESPONSE_BYTES:
                raise self._refuse(f"answer too large ({int(value)} bytes announced)")
        self._head = head

    def _response(self, head: h11.Response) -> httpx.Response:
        headers = [(n, v) for n, v in head.headers.raw_items() if n.lower() not in _DROPPED]
        return httpx.Response(
            head.status_code,
            headers=headers,
            content=bytes(self._body),
            request=self._request,
            extensions={"http_version": b"HTTP/" + head.http_version, "reason_phrase": head.reason},
        )

    def feed(self, data: bytes) -> httpx.Response | None:
        """Take the next bytes read (b"" at EOF); the response once complete, else None."""
        if self._eof:
            raise httpx.RemoteProtocolError(
                "connection closed before a complete answer", request=self._request
            )
        self._eof = not data
        if self._eof and self._wire == 0:
            raise httpx.RemoteProtocolError(
                "the server closed the connection without answering", request=self._request
            )
        self._wire += len(data)
        if self._wire > MAX_WIRE_BYTES:
            raise self._refuse(f"answer too large (over {MAX_WIRE_BYTES // 2**20} MiB)")
        try:
            self._conn.receive_data(data)
            while True:
                event = self._conn.next_event()
                if event is h11.NEED_DATA:
                    if self._eof:
                        break
                    return None
                if isinstance(event, h11.InformationalResponse):
                    continue  # 100 Continue, 103 Early Hints: the real answer follows
                if isinstance(event, h11.Response):
                    self._check_head(event)
                elif isinstance(event, h11.Data):
                    if len(self._body) + len(event.data) > MAX_RESPONSE_BYTES:
                        raise self._refuse(f"answer too large (over {MAX_RESPONSE_BYTES // 2**20} MiB)")
                    self._body += event.data
                elif isinstance(event, h11.EndOfMessage) and self._head is not None:
                    return self._response(self._head)
                else:
                    break  # ConnectionClosed (or PAUSED) before a whole answer
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=self._request) from None
        raise httpx.RemoteProtocolError("connection closed before a complete answer", request=self._request)


def parse_response(raw: bytes, request: httpx.Request) -> httpx.Response:
    """An httpx.Response from a whole HTTP/1.x answer (as if read to EOF)."""
    parser = AnswerParser(request)
    response = parser.feed(raw) if raw else None
    if response is None:
        response = parser.feed(b"")
    if response is None:  # feed(b"") answers or raises; kept for the type checker
        raise httpx.RemoteProtocolError("no complete answer", request=request)
    return response


def _insecure_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _tls_reason(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    return str(exc.reason or exc)


Verify = ssl.SSLContext | bool | Callable[[], ssl.SSLContext]
"""TLS for https URLs: a context, the system store (True), no verification (False), or a maker."""


class LeanGetTransport(httpx.AsyncBaseTransport):
    """GET over a fresh connection per request (``Connection: close``), TLS verified by default."""

    def __init__(self, verify: Verify = True) -> None:
        # An SSLContext loads the CA store, which is slow: built at the first https request, so a
        # console reached over http never pays.
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            v = self._verify
            if isinstance(v, ssl.SSLContext):
                self._ssl = v
            elif v is True:
                self._ssl = ssl.create_default_context()
            elif v is False:
                self._ssl = _insecure_context()
            else:
                self._ssl = v()
        return self._ssl

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send one GET and read its answer up to its end (or the read timeout, for all of it)."""
        if request.method != "GET":
            raise httpx.UnsupportedProtocol(f"this transport sends GET only, not {request.method}")
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}")
        tls = url.scheme == "https"
        host = url.host
        port = url.port or (443 if tls else 80)
        connect_s, read_s = _timeout(request)
        parser = AnswerParser(request)
        try:
            async with asyncio.timeout(connect_s):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=self._context() if tls else None,
                    server_hostname=host if tls else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connect to {host}:{port} timed out", request=request) from None
        except ssl.SSLError as exc:
            raise httpx.ConnectError(f"TLS: {_tls_reason(exc)}", request=request) from None
        except ConnectionRefusedError:
            raise httpx.ConnectError("connection refused", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(exc.strerror or str(exc), request=request) from None
        ssl_object = writer.get_extra_info("ssl_object") if tls else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            # One limit for the whole exchange: a server dripping a byte at a time is cut off
            # at the read timeout, not kept alive by each byte.
            async with asyncio.timeout(read_s):
                writer.write(parser.request_bytes)
                await writer.drain()
                response = None
                while response is None:
                    response = parser.feed(await reader.read(_READ_SIZE))
        except httpx.RemoteProtocolError as exc:
            if tls and "without answering" in str(exc):
                # What an https server that requires a client certificate does after the handshake.
                raise httpx.RemoteProtocolError(f"{exc} ({CLIENT_CERT_HINT})", request=request) from None
            raise
        except TimeoutError:
            raise httpx.ReadTimeout(f"no whole answer from {host}:{port} in time", request=request) from None
        except ssl.SSLError as exc:
            raise httpx.ReadError(f"TLS: {_tls_reason(exc)}", request=request) from None
        except OSError as exc:
            raise httpx.ReadError(exc.strerror or str(exc), request=request) from None
        finally:
            # Not awaiting wait_closed: a frozen peer must not hold us in a TLS shutdown.
            writer.close()
        if der is not None:
            response.extensions["tls_not_after"] = not_after(der)
        return response
