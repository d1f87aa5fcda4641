"""Hostile servers on loopback for the hardening tests: raw HTTP answers chosen per path.

A fake is what a real server cannot produce on demand (a gzip bomb, a drip, a lying header);
everything it receives is kept so tests can assert what was (not) sent, e.g. no credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

# A handler gets the request head and the writer; it writes whatever it likes, then returns.
Handler = Callable[["Received", asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Received:
    """One request as the fake server saw it."""

    method: str
    target: str
    headers: dict[str, str]
    raw: bytes
    # The connection's reader, for a handler that waits for the client to hang up (keep-alive).
    reader: asyncio.StreamReader | None = field(default=None, repr=False, compare=False)


class Loopback:
    """Listening on 127.0.0.1 and stopping: what every fake server here shares."""

    _server: asyncio.Server | None
    port: int

    async def _listen(
        self,
        serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                self._server.close_clients()  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)


@dataclass
class FakeServer(Loopback):
    """A loopback TCP server whose answers come from ``routes`` (path prefix → handler)."""

    routes: dict[str, Handler]
    received: list[Received] = field(default_factory=list)
    port: int = 0
    tls: ssl.SSLContext | None = None  # serve https with this context
    _server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """http(s)://127.0.0.1:PORT (no trailing slash)."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        target = rest.rsplit(" ", 1)[0]
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        got = Received(method, target, headers, head, reader)
        self.received.append(got)
        path = target.split("?", 1)[0]
        handler = next(
            (h for p, h in sorted(self.routes.items(), key=lambda kv: -len(kv[0])) if path.startswith(p)),
            None,
        )
        try:
            if handler is None:
                writer.write(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            else:
                await handler(got, writer)
            await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def start(self) -> FakeServer:
        """Listen on 127.0.0.1 on a free port."""
        await self._listen(self._serve, self.tls)
        return self


@contextlib.asynccontextmanager
async def fake_server(
    routes: dict[str, Handler], *, tls: ssl.SSLContext | None = None
) -> AsyncIterator[FakeServer]:
    """A FakeServer running for the ``async with`` block (https when ``tls`` is given)."""
    server = await FakeServer(routes, tls=tls).start()
    try:
        yield server
    finally:
        await server.stop()


def answer(
    body: bytes, status: str = "200 OK", headers: dict[str, str] | None = None, *, length: bool = True
) -> Handler:
    """A handler sending one whole answer (Content-Length added unless ``length`` is False)."""

    async def handle(_got: Received, writer: asyncio.StreamWriter) -> None:
        head = [f"HTTP/1.1 {status}"]
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}")
        if length:
            head.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    return handle


def json_answer(body: bytes, status: str = "200 OK") -> Handler:
    """A JSON answer."""
    return answer(body, status, {"Content-Type": "application/json"})
