"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, for the browser view.

The page draws its terminal on a canvas, so what it shows is read from the frames its websocket
received (the terminal's input), with escape sequences removed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

ESCAPES = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()#][0-9A-Za-z]|\x1b[=>78]"
)


def chromium() -> str | None:
    """The browser's path, or None when it is not installed."""
    return shutil.which("chromium")


@dataclass
class Page:
    """One tab: what its websocket received, decoded to text in arrival order."""

    frames: list[str] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    _ws: Any = None
    _session: str = ""
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)

    def text(self, since: int = 0) -> str:
        """Everything received from frame ``since`` on, escape sequences removed."""
        return ESCAPES.sub("", "".join(self.frames[since:]))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """A DevTools command in this tab's session; its result."""
        n = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[n] = future
        await self._ws.send_str(
            json.dumps({"id": n, "method": method, "params": params, "sessionId": self._session})
        )
        return await asyncio.wait_for(future, 30)

    async def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value in the page."""
        got = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return got.get("result", {}).get("value")

    def _take(self, msg: dict[str, Any]) -> None:
        if "id" in msg and msg["id"] in self._waiting:
            self._waiting.pop(msg["id"]).set_result(msg.get("result", {}))
            return
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Network.webSocketFrameReceived":
            resp = params.get("response", {})
            data = resp.get("payloadData", "")
            if resp.get("opcode") == 2:
                data = base64.b64decode(data).decode("utf-8", errors="replace")
            self.frames.append(data)
        elif method == "Network.responseReceived":
            self.statuses.append(int(params.get("response", {}).get("status", 0)))


@contextlib.asynccontextmanager
async def browser() -> AsyncIterator[Any]:
    """A headless Chromium with its DevTools socket; yields a function that opens a Page at a URL."""
    path = chromium()
    assert path is not None, "chromium is not installed (apt-get install chromium)"
    profile = tempfile.mkdtemp(prefix="pgtop-ha-chromium-")
    proc = await asyncio.create_subprocess_exec(
        path, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,1000",
        f"--user-data-dir={profile}", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    http = aiohttp.ClientSession()
    pages: list[Page] = []
    readers: list[asyncio.Task[None]] = []
    try:
        assert proc.stderr is not None
        line = ""
        while "DevTools listening on" not in line:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode(errors="replace")
            assert line, "chromium exited before its DevTools socket was up"
        endpoint = line.split("DevTools listening on", 1)[1].strip()
        ws = await http.ws_connect(endpoint, max_msg_size=0)

        async def pump() -> None:
            async for msg in ws:
                doc = json.loads(msg.data)
                for page in pages:
                    if doc.get("sessionId") == page._session or ("id" in doc and doc["id"] in page._waiting):
                        page._take(doc)

        readers.append(asyncio.create_task(pump()))
        ids = itertools.count(1_000_000)

        async def browse(url: str) -> Page:
            async def root(method: str, **params: Any) -> dict[str, Any]:
                n = next(ids)
                probe = Page(_ws=ws)
                future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                probe._waiting[n] = future
                pages.append(probe)
                try:
                    await ws.send_str(json.dumps({"id": n, "method": method, "params": params}))
                    return await asyncio.wait_for(future, 30)
                finally:
                    pages.remove(probe)

            target = await root("Target.createTarget", url="about:blank")
            attached = await root("Target.attachToTarget", targetId=target["targetId"], flatten=True)
            page = Page(_ws=ws, _session=attached["sessionId"])
            pages.append(page)
            await page.call("Network.enable")
            await page.call("Runtime.enable")
            await page.call("Page.navigate", url=url)
            return page

        yield browse
    finally:
        for task in readers:
            task.cancel()
        await http.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
