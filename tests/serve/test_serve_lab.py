"""`serve` on the lab: an attached console and a browser tab (headless Chromium) through a switchover.

Both are fed by one serve: the tab runs `attach` on its socket, and neither holds a credential.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from pgtop_ha.console import attach_sections
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.serve.address import Address
from pgtop_ha.serve.viewer import AttachSource
from pgtop_ha.ui.attach import AttachApp
from tests.serve.test_serve_stream import until
from tests.support.browser import browser, chromium
from tests.support.lab_polls import quiet
from tests.support.ports import free_port

pytestmark = pytest.mark.lab


@contextlib.asynccontextmanager
async def served(lab: Lab, tmp_path: Path) -> AsyncIterator[tuple[Path, str, list[str]]]:
    """`pgtop-ha serve --web` on the lab: its socket, its browser URL, and its output so far."""
    sock = tmp_path / "serve.sock"
    port = free_port()
    argv = [sys.executable, "-m", "pgtop_ha", "--config", str(lab.layout.console_config), "serve",
            "--socket", str(sock), "--web", f"127.0.0.1:{port}"]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    said: list[str] = []

    async def read() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            said.append(line.decode(errors="replace"))

    reading = asyncio.create_task(read())
    try:
        await until(lambda: any("browser view: " in s for s in said) or reading.done(), 30)
        url = next(re.findall(r"http://\S+", s)[0] for s in said if "browser view: " in s)
        yield sock, url, said
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)
        await reading


@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium (scripts/setup installs it)")
async def test_a_viewer_and_a_browser_tab_follow_a_switchover(lab: Lab, tmp_path: Path) -> None:
    rest_password = lab.layout.rest_password_file.read_text().strip()
    async with served(lab, tmp_path) as (sock, url, said):
        source = await AttachSource.connect(Address(path=sock))
        assert rest_password not in json.dumps(source.hello)
        app = AttachApp(attach_sections(source.hello, "dark"), source)
        async with app.run_test(size=(120, 40)), browser() as browse:
            page = await browse(url)
            old = await asyncio.to_thread(lab.leader)
            assert old is not None

            def shows_leader(name: str, since: int = 0) -> bool:
                return re.search(rf"{name}\s+leader", page.text(since)) is not None

            await until(lambda: app.snapshot is not None and app.snapshot.cluster.leader == old, 30)
            await until(lambda: shows_leader(old), 60)
            assert await page.evaluate("document.body.classList.contains('-first-byte')")
            mark = len(page.frames)
            new = next(n for n in lab.layout.names if n != old)
            await asyncio.to_thread(faults.switchover, quiet(lab), new)
            # The attached console and the tab show the new leader, as the one serve saw it.
            await until(lambda: app.snapshot is not None and app.snapshot.cluster.leader == new, 60)
            await until(lambda: shows_leader(new, mark), 60)
            assert rest_password not in page.text()
            # A wrong token: nothing, not even the page.
            async with aiohttp.ClientSession() as http:
                wrong = url.rsplit("/", 2)[0] + "/not-the-token/"
                async with http.get(wrong) as resp:
                    assert resp.status == 404
                async with http.get(url.rsplit("/", 2)[0] + "/") as resp:
                    assert resp.status == 404
        await until(lambda: sum("attached" in s for s in said) >= 2, 10)  # the tab ran `attach`
