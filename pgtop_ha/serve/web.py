"""`serve --web`: the attached console in a browser through textual-serve, behind a random token.

Each tab runs `pgtop-ha attach` on the serve's socket: a tab costs the cluster nothing, and the
process a tab runs gets no secret from the environment (it needs none).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shlex
import sys
from collections.abc import Callable
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from pgtop_ha.errors import UserError
from pgtop_ha.serve.address import Address

# Environment names a tab's process is not given: the serve may hold passwords in them.
SECRET_ENV = re.compile(r"PASS|SECRET|TOKEN|KEY|CRED|^PG", re.IGNORECASE)


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

    def __init__(self, host: str, port: int, target: Address) -> None:
        self.token = secrets.token_urlsafe(24)
        command = f"{shlex.quote(sys.executable)} -m pgtop_ha attach {shlex.quote(str(target))}"
        super().__init__(command, host=host, port=port, title="pgtop-ha")
        shown = f"[{host}]" if ":" in host else host
        self.public_url = f"http://{shown}:{port}"
        self.url = f"{self.public_url}/{self.token}/"

    async def _make_app(self) -> web.Application:
        app = web.Application()
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
        if not secrets.compare_digest(request.match_info.get("token", ""), self.token):
            raise web.HTTPNotFound(text="pgtop-ha: not found (the URL needs the token serve printed)\n")

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """The page for one tab (token checked)."""
        self._check(request)
        ws = f"{self.public_url}/{self.token}/ws".replace("http:", "ws:", 1)
        return {
            "font_size": 16,
            "app_websocket_url": ws,
            "config": {"static": {"url": f"{self.public_url}/static/"}},
            "application": {"name": self.title},
        }

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab's terminal (token checked): an `attach` process per tab."""
        self._check(request)
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _size(request.query.get("width"), 80)
        height = _size(request.query.get("height"), 24)
        await websocket.prepare(request)
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
        return websocket

    async def run(self, say: Callable[[str], None]) -> None:
        """Serve until cancelled."""
        runner = web.AppRunner(await self._make_app(), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            try:
                await site.start()
            except OSError as exc:
                raise UserError(f"--web {self.host}:{self.port}: {exc.strerror or exc}") from None
            say(f"browser view: {self.url}")
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
