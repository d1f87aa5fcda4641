"""The browser view against hostile clients: no token, another origin, a slow head, too many tabs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from pgtop_ha.serve import web as web_module
from pgtop_ha.serve.address import Address
from pgtop_ha.serve.web import WebView
from tests.serve.test_serve_stream import until
from tests.support.ports import free_port


@contextlib.asynccontextmanager
async def viewing(tmp_path: Path, **options: int) -> AsyncIterator[WebView]:
    view = WebView("127.0.0.1", free_port(), Address(path=tmp_path / "none.sock"), **options)  # type: ignore[arg-type]
    said: list[str] = []
    task = asyncio.create_task(view.run(said.append))
    await until(lambda: bool(said) or task.done())
    try:
        yield view
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_token_the_origin_and_the_tab_cap(tmp_path: Path) -> None:
    async with viewing(tmp_path, max_tabs=1) as view, aiohttp.ClientSession() as http:
        base = view.public_url
        async with http.get(f"{base}/wrong-token/") as r:
            assert r.status == 404
        async with http.get(view.url) as r:
            page = await r.text()
            assert r.status == 200 and f"ws://127.0.0.1:{view.port}/{view.token}/ws" in page
        # A page of another origin may not open the terminal's websocket, token or not.
        ws_url = f"{base}/{view.token}/ws"
        for origin in ("http://evil.example", None):
            headers = {"Origin": origin} if origin else {}
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(ws_url, headers=headers)
            assert refused.value.status == 403
        # DNS rebinding: the right token under another host name is not this view.
        async with http.get(view.url, headers={"Host": f"evil.example:{view.port}"}) as r:
            assert r.status == 421
        # Past the cap, a tab is told the view is busy (and costs no process).
        view.tabs = 1
        with pytest.raises(aiohttp.WSServerHandshakeError) as busy:
            await http.ws_connect(ws_url, headers={"Origin": base})
        assert busy.value.status == 503


async def test_a_slow_head_is_cut_and_connections_are_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_module, "HEAD_TIMEOUT_S", 0.5)
    monkeypatch.setattr(web_module, "MAX_CONNECTIONS", 3)
    async with viewing(tmp_path) as view:
        slow = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", view.port)
            writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
            slow.append((reader, writer))
        # A fourth is refused while three are open.
        reader, writer = await asyncio.open_connection("127.0.0.1", view.port)
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        # Each slow one is closed at the deadline, with nothing said.
        for reader, writer in slow:
            with contextlib.suppress(ConnectionError):
                assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
        # Then the view answers again, one request per connection.
        async with aiohttp.ClientSession() as http, http.get(view.url) as r:
            assert r.status == 200 and r.headers.get("Connection", "").lower() == "close"


def test_a_wildcard_address_prints_a_url_a_browser_can_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pgtop_ha.serve import cli as serve_cli

    made: list[WebView] = []
    monkeypatch.setattr(serve_cli.sockets, "getfqdn", lambda: "db-console.example")  # type: ignore[attr-defined]
    import pgtop_ha.serve.server as server_module

    def run_serve(*args: object, **options: WebView) -> int:
        made.append(options["web"])
        return 0

    monkeypatch.setattr(server_module, "run_serve", run_serve)
    from pgtop_ha.cli import main

    assert main(["--patroni", "http://127.0.0.1:1", "serve", "--socket", str(tmp_path / "s.sock"),
                 "--web", "0.0.0.0:8080", "--web-host"]) == 0  # fmt: skip
    assert made[0].url.startswith("http://db-console.example:8080/")
