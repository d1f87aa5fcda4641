"""A server whose server_version no PostgreSQL sends: one line naming the node, no library traceback."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            body = await reader.readexactly(length - 4)
            if struct.unpack("!i", body[:4])[0] == 80877103:  # SSLRequest: no TLS here
                writer.write(b"N")
                await writer.drain()
                continue
            break
        ok = _msg(b"R", struct.pack("!i", 0))
        version = _msg(b"S", b"server_version\x00banana\x00")
        writer.write(ok + version + _msg(b"K", struct.pack("!ii", 1, 2)) + _msg(b"Z", b"I"))
        await writer.drain()
        await reader.read(1000)
    writer.close()


@pytest.fixture
def banana_port() -> Iterator[int]:
    """A loopback server that lets anyone in and says its version is "banana"."""
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(_handle, "127.0.0.1", 0))
    port: int = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield port
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)


def test_an_unreadable_server_version_is_one_line(tmp_path: Path, banana_port: int) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'[[nodes]]\nname = "n1"\nhost = "127.0.0.1"\nport = {banana_port}\n')
    out = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "--config", str(config), "snapshot"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert 'Unable to parse Postgres version from "banana"; is this PostgreSQL' in out.stderr
