"""`serve --web`: the attached console in a browser through textual-serve, behind a random token.

Each tab runs `pgtop-ha attach` on the serve's socket, without the serve's secrets. Tabs are
capped; a connection carries one request, whose head must come within a deadline; a websocket
from another origin is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import Any, cast

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from pgtop_ha.errors import UserError
from pgtop_ha.serve.address import Address, loopback

# Environment names a tab's process is not given: the serve may hold passwords in them.
SECRET_ENV = re.compile(r"PASS|SECRET|TOKEN|KEY|CRED|^PG", re.IGNORECASE)
HEAD_TIMEOUT_S = 10.0  # a connection's request line and headers must arrive within this
MAX_CONNECTIONS = 64  # HTTP connections open at once (tabs' websockets included)
IDLE_TIMEOUT_S = 5.0  # aiohttp's keep-alive: one request a connection, so this is short


class _HeadDeadline(asyncio.Protocol):
    """aiohttp's protocol for one connection, aborted when its request head is late or too many are open."""

    def __init__(self, inner: asyncio.Protocol, open_now: set[_HeadDeadline]) -> None:
        self._inner = inner
        self._open = open_now
        self._timer: asyncio.TimerHandle | None = None
        self._tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start the clock (or refuse the connection beyond the cap), then hand it to aiohttp."""
        if len(self._open) >= MAX_CONNECTIONS:
            cast(asyncio.Transport, transport).abort()
            return
        self._open.add(self)
        self._timer = asyncio.get_running_loop().call_later(
            HEAD_TIMEOUT_S, cast(asyncio.Transport, transport).abort
        )
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        """Watch for the end of the head, then pass the bytes on."""
        if self._timer is not None:
            seen = self._tail + data[:65536]
            if b"\r\n\r\n" in seen:
                self._timer.cancel()
                self._timer = None
            self._tail = seen[-3:]
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        """Passed on."""
        return self._inner.eof_received() if self in self._open else None

    def connection_lost(self, exc: Exception | None) -> None:
        """Passed on; the clock stops."""
        if self._timer is not None:
            self._timer.cancel()
        if self in self._open:
            self._open.discard(self)
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        """Passed on."""
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        """Passed on."""
        self._inner.resume_writing()


@web.middleware
async def _one_request(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every answer but a websocket closes its connection: the head deadline then covers all."""
    response = await handler(request)
    if not isinstance(response, web.WebSocketResponse):
        response.force_close()
    return response


async def _close(websocket: web.WebSocketResponse) -> None:
    await websocket.close()


def _size(text: str | None, default: int) -> int:
    """A terminal dimension from the browser, within what a screen can be."""
    try:
        return min(max(int(text or default), 10), 1000)
    except ValueError:
        return default


class _TabService(AppService):
    """textual-serve's per-tab process, started without the serve's secrets."""

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width, height)
        return {k: v for k, v in env.items() if not SECRET_ENV.search(k)}


class WebView(Server):
    """textual-serve's server with every page under /<token>/; anything else is 404."""

    def __init__(
        self, host: str, port: int, target: Address, *, shown: str | None = None, max_tabs: int = 8
    ) -> None:
        self.token = secrets.token_urlsafe(24)
        command = f"{shlex.quote(sys.executable)} -m pgtop_ha attach {shlex.quote(str(target))}"
        super().__init__(command, host=host, port=port, title="pgtop-ha")
        name = shown or host
        name = f"[{name}]" if ":" in name else name
        self.public_url = f"http://{name}:{port}"
        self.url = f"{self.public_url}/{self.token}/"
        self.max_tabs = max_tabs
        self.tabs = 0
        self._connections: set[_HeadDeadline] = set()

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[_one_request])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/{token}/", self.handle_index, name="index"),
                web.get("/{token}/ws", self.handle_websocket, name="websocket"),
                web.static("/static", self.statics_path, name="static"),
            ]
        )
        return app

    def _check(self, request: web.Request) -> None:
        # Compared in constant time; a wrong or missing token learns nothing, not even the route.
        if not secrets.compare_digest(request.match_info.get("token", "").encode(), self.token.encode()):
            raise web.HTTPNotFound(text="pgtop-ha: not found (the URL needs the token serve printed)\n")
        # On loopback, a page from another name (DNS rebinding) is not this view.
        if loopback(self.host) and not loopback(request.url.host or ""):
            raise web.HTTPMisdirectedRequest(text="pgtop-ha: ask for this view by a loopback address\n")

    def _check_origin(self, request: web.Request) -> None:
        # A websocket is opened by a page: only this view's own page may open one.
        origin = request.headers.get("Origin")
        if origin != f"http://{request.host}":
            raise web.HTTPForbidden(text="pgtop-ha: the websocket must come from this view's own page\n")

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """The page for one tab (token checked)."""
        self._check(request)
        # As the browser named this host: a URL built from the bind address may not reach it.
        base = f"http://{request.host}"
        ws = f"{base}/{self.token}/ws".replace("http:", "ws:", 1)
        return {
            "font_size": 16,
            "app_websocket_url": ws,
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab's terminal (token and origin checked): an `attach` process per tab, up to the cap."""
        self._check(request)
        self._check_origin(request)
        if self.tabs >= self.max_tabs:
            raise web.HTTPServiceUnavailable(
                text=f"pgtop-ha: busy: {self.tabs} browser tabs open, the most this serve runs (--max-tabs)\n"
            )
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=64 * 1024)
        width = _size(request.query.get("width"), 80)
        height = _size(request.query.get("height"), 24)
        self.tabs += 1
        try:
            await websocket.prepare(request)
            await self._tab(websocket, width, height)
        finally:
            self.tabs -= 1
        return websocket

    async def _tab(self, websocket: web.WebSocketResponse, width: int, height: int) -> None:
        service = _TabService(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=lambda: _close(websocket),
            download_manager=self.download_manager,
            debug=False,
        )
        try:
            await service.start(width, height)
            with contextlib.suppress(ValueError, TypeError, KeyError, IndexError, ConnectionError):
                # A browser's garbage ends its own tab, never the serve.
                await self._process_messages(websocket, service)
        finally:
            await service.stop()

    async def run(self, say: Callable[[str], None]) -> None:
        """Serve until cancelled."""
        runner = web.AppRunner(
            await self._make_app(),
            access_log=None,
            keepalive_timeout=IDLE_TIMEOUT_S,
            max_line_size=8190,
            max_field_size=8190,
        )
        await runner.setup()
        listening: asyncio.Server | None = None
        try:
            factory = runner.server
            assert factory is not None  # set up just above
            try:
                listening = await asyncio.get_running_loop().create_server(
                    lambda: _HeadDeadline(factory(), self._connections),
                    self.host,
                    self.port,
                    backlog=MAX_CONNECTIONS,
                    reuse_address=True,
                )
            except OSError as exc:
                raise UserError(f"--web {self.host}:{self.port}: {exc.strerror or exc}") from None
            say(f"browser view: {self.url}")
            await asyncio.Event().wait()
        finally:
            if listening is not None:
                listening.close()
            await runner.cleanup()
