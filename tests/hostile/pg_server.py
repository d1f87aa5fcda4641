"""A fake PostgreSQL server on loopback that asks for the password in clear text and keeps it.

It speaks just enough of the protocol for a client to reach the password step: it refuses TLS
('N' to SSLRequest), reads the startup message, answers AuthenticationCleartextPassword
(R, code 3) or AuthenticationMD5Password (R, code 5), and records whatever password message
comes back before failing the login. Tests assert on ``passwords`` that no secret was sent.
With ``drip`` the request goes out one byte per write, so a client sees it split across reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from tests.hostile.fakes import Loopback

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
PROTOCOL_3 = 196608
CLEARTEXT = 3
MD5 = 5


def _error(message: str, code: str = "28P01") -> bytes:
    body = b"SFATAL\0" + b"C" + code.encode() + b"\0" + b"M" + message.encode() + b"\0\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


@dataclass
class FakePostgres(Loopback):
    """What the fake saw: connections, startup parameters and every password message's body."""

    auth: int = CLEARTEXT
    drip: bool = False
    connections: int = 0
    ssl_requests: int = 0
    startups: list[dict[str, str]] = field(default_factory=list)
    passwords: list[bytes] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            async with asyncio.timeout(10):
                await self._talk(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _talk(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            (length,) = struct.unpack("!i", await reader.readexactly(4))
            if not 8 <= length <= 10_000:
                return
            body = await reader.readexactly(length - 4)
            (code,) = struct.unpack("!i", body[:4])
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                self.ssl_requests += 1
                writer.write(b"N")  # no TLS here: the password step runs in the clear
                await writer.drain()
                continue
            if code != PROTOCOL_3:
                return
            words = body[4:].split(b"\0")
            params = {
                k.decode(errors="replace"): v.decode(errors="replace")
                for k, v in zip(words[::2], words[1::2], strict=False)
                if k
            }
            self.startups.append(params)
            break
        # A notice first, so the request is not the first message a client parses.
        notice = b"SNOTICE\0Mhello\0\0"
        request = b"N" + struct.pack("!i", len(notice) + 4) + notice
        if self.auth == MD5:
            request += b"R" + struct.pack("!ii", 12, MD5) + b"salt"
        else:
            request += b"R" + struct.pack("!ii", 8, CLEARTEXT)
        for piece in [request[i : i + 1] for i in range(len(request))] if self.drip else [request]:
            writer.write(piece)
            await writer.drain()
            if self.drip:
                await asyncio.sleep(0.001)  # pacing, so each byte leaves in its own segment
        kind = await reader.readexactly(1)
        (length,) = struct.unpack("!i", await reader.readexactly(4))
        body = await reader.readexactly(max(0, min(length, 10_000) - 4))
        if kind == b"p":
            self.passwords.append(body.rstrip(b"\0"))
        writer.write(_error("password authentication failed for user (fake server)"))
        await writer.drain()

    async def start(self) -> FakePostgres:
        """Listen on 127.0.0.1 on a free port."""
        await self._listen(self._serve)
        return self


@contextlib.asynccontextmanager
async def fake_postgres(auth: int = CLEARTEXT, *, drip: bool = False) -> AsyncIterator[FakePostgres]:
    """A FakePostgres running for the ``async with`` block."""
    server = await FakePostgres(auth=auth, drip=drip).start()
    try:
        yield server
    finally:
        await server.stop()
