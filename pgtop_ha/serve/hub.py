"""The viewers of one `serve`: each proves who it is, gets hello, what the server holds, then every line.

Every viewer is untrusted and bounded: a queue (one that falls behind is dropped), a deadline on
every write, a rate of markers and a cap on viewers. A marker carries the viewer's identity as
the serve knows it (its uid on the socket, its token's name over TCP), never a name it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.record.markers import peer_uid
from pgtop_ha.serve import wire
from pgtop_ha.serve.peers import Token, match, user_name

QUEUE = 64  # lines a viewer may be behind before it is dropped
BACKLOG = 600  # snapshots kept for a viewer that comes late
BACKLOG_BYTES = 256 * 1024**2
MAX_VIEWERS = 256  # viewers attached at once (`serve --max-viewers`)
WRITE_TIMEOUT_S = 20.0  # a viewer that takes nothing for this long is closed
BYE_TIMEOUT_S = 2.0  # a dropped viewer gets this long to take its last line
AUTH_TIMEOUT_S = 5.0  # a TCP viewer's first line (its token) must come within this
MARKER_BURST = 5  # markers one viewer may send at once
MARKER_EVERY_S = 6.0  # then one per this many seconds
ALL_MARKER_BURST = 20  # markers from every viewer together
ALL_MARKER_EVERY_S = 1.0
REFUSED_SAID_EVERY_S = 10.0
REFUSALS_SAID_BURST = 10  # refused connections logged at once, then one per REFUSED_SAID_EVERY_S


class Bucket:
    """A token bucket: ``burst`` at once, then one per ``every_s``."""

    def __init__(self, burst: int, every_s: float, now: Callable[[], float]) -> None:
        self.burst = burst
        self.every_s = every_s
        self._now = now
        self._level = float(burst)
        self._at = now()

    def take(self) -> bool:
        """One token if there is one."""
        now = self._now()
        self._level = min(self.burst, self._level + (now - self._at) / self.every_s)
        self._at = now
        if self._level < 1:
            return False
        self._level -= 1
        return True


def _monotonic() -> float:
    return asyncio.get_running_loop().time()


@dataclass(eq=False)
class Viewer:
    """One attached viewer: who it is, its queue, its writer and its marker allowance."""

    number: int
    who: str
    writer: asyncio.StreamWriter
    queue: asyncio.Queue[bytes] = field(default_factory=lambda: asyncio.Queue(QUEUE))
    markers: Bucket = field(default_factory=lambda: Bucket(MARKER_BURST, MARKER_EVERY_S, _monotonic))
    closing: str | None = None
    sending: asyncio.Task[None] | None = None
    farewell: asyncio.Task[None] | None = None


def _end(writer: asyncio.StreamWriter) -> None:
    """Close now: a peer that does not read gets its connection aborted, not a wait for it."""
    transport = writer.transport
    if transport.is_closing() and not transport.get_write_buffer_size():
        return
    if transport.get_write_buffer_size():
        transport.abort()
    else:
        transport.close()


async def _put(writer: asyncio.StreamWriter, line: bytes, within_s: float) -> None:
    writer.write(line)
    await asyncio.wait_for(writer.drain(), within_s)


async def _farewell(writer: asyncio.StreamWriter, line: bytes) -> None:
    """A dropped viewer's last line, then the end: closed at the deadline whether it read or not."""
    try:
        await _put(writer, line, BYE_TIMEOUT_S)
    except (TimeoutError, ConnectionError, OSError, RuntimeError):
        pass
    finally:
        _end(writer)


class Hub:
    """Every attached viewer, the backlog, and the lines to all of them."""

    def __init__(
        self,
        hello: dict[str, Any],
        events: Callable[[], bytes],
        on_marker: Callable[[str, str], object],
        say: Callable[[str], None],
        *,
        tokens: tuple[Token, ...] = (),
        max_viewers: int = MAX_VIEWERS,
        group: bool = False,
    ) -> None:
        self._hello = hello
        self._events = events
        self._on_marker = on_marker
        self._say = say
        self._tokens = tokens
        self._max_viewers = max_viewers
        self._group = group  # a --group socket: any uid the file mode lets in may attach
        self.viewers: set[Viewer] = set()
        self.backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._numbers = 0
        self._connections: set[asyncio.Task[Any]] = set()
        self._all_markers: Bucket | None = None
        self.refused_markers = 0
        self._refused_said = -REFUSED_SAID_EVERY_S
        self._refusals: Bucket | None = None
        self._unsaid = 0

    def snapshot(self, line: bytes) -> None:
        """A new snapshot: kept for late viewers, sent to every viewer."""
        self.backlog.append(line)
        self._backlog_bytes += len(line)
        while len(self.backlog) > BACKLOG or self._backlog_bytes > BACKLOG_BYTES:
            self._backlog_bytes -= len(self.backlog.popleft())
        self.send(line)

    def send(self, line: bytes) -> None:
        """A line to every viewer; one whose queue is full is dropped, the others go on."""
        for viewer in list(self.viewers):
            if viewer.closing is not None:
                continue
            try:
                viewer.queue.put_nowait(line)
            except asyncio.QueueFull:
                self.drop(viewer, f"it fell {viewer.queue.maxsize} lines behind")

    def drop(self, viewer: Viewer, why: str, bye: str | None = None) -> None:
        """Stop sending to ``viewer``: its last line says why, then it is closed (with a deadline)."""
        if viewer.closing is not None:
            return
        viewer.closing = why
        if bye is None:
            self._say(f"viewer {viewer.number} ({viewer.who}) dropped: {why}")
        # Whatever it was still waiting to take is abandoned: its last line has a deadline of its own.
        if viewer.sending is not None:
            viewer.sending.cancel()
        line = wire.encode("bye", text=bye or f"dropped by pgtop-ha serve: {why}")
        viewer.farewell = asyncio.create_task(
            _farewell(viewer.writer, line), name=f"viewer-{viewer.number}-bye"
        )

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: who it is, then hello to its end; never an exception out of here."""
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            if len(self._connections) > 2 * self._max_viewers:
                writer.transport.abort()  # a flood of connections: none of them is worth a byte
                return
            who = await self._identify(reader, writer)
            if who is None:
                writer.transport.abort()
                return
            if len(self.viewers) >= self._max_viewers:
                await self._busy(writer)
                return
            await self._attached(who, reader, writer)
        finally:
            if task is not None:
                self._connections.discard(task)

    async def _identify(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str | None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock)
        if uid is not None:
            if not self._group and uid not in (os.getuid(), 0):
                self._refused(
                    f"a connection from {user_name(uid)} refused: the socket is not shared (--group)"
                )
                return None
            return f"{user_name(uid)} via socket"
        # TCP: the first line is the token, before a single byte goes back.
        peer = writer.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "TCP"
        try:
            line = await asyncio.wait_for(reader.readline(), AUTH_TIMEOUT_S)
        except (TimeoutError, ValueError, asyncio.LimitOverrunError, ConnectionError, OSError):
            line = b""
        token = None
        with contextlib.suppress(ParseError):
            doc = wire.decode(line, "viewer") if line else {}
            if doc.get("t") == "auth":
                token = match(self._tokens, doc.get("token"))
        if token is None:
            self._refused(
                f"a connection from {where} refused: no valid token in its first {AUTH_TIMEOUT_S:g} s"
            )
            return None
        return f"{token.name} via tcp"

    async def _busy(self, writer: asyncio.StreamWriter) -> None:
        why = f"busy: {len(self.viewers)} viewers attached, the most this serve takes (--max-viewers)"
        writer.write(wire.encode("bye", text=f"pgtop-ha serve is {why}"))
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(writer.drain(), BYE_TIMEOUT_S)
        _end(writer)

    async def _attached(self, who: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._numbers += 1
        viewer = Viewer(self._numbers, who, writer)
        # What the viewer gets first is taken now, with it registered in the same step: no line
        # falls between the backlog and the live stream.
        hello = wire.encode("hello", version=wire.VERSION, backlog=len(self.backlog), **self._hello)
        first = [hello, self._events(), *self.backlog]
        self.viewers.add(viewer)
        self._say(f"viewer {viewer.number} ({who}) attached ({len(self.viewers)} now)")
        sending = asyncio.create_task(self._write(viewer, first), name=f"viewer-{viewer.number}-out")
        viewer.sending = sending
        reading = asyncio.create_task(self._read(viewer, reader), name=f"viewer-{viewer.number}-in")
        try:
            await asyncio.wait({sending, reading}, return_when=asyncio.FIRST_COMPLETED)
            if viewer.closing is None:
                viewer.closing = "gone"  # the peer went away: nothing more to tell it
            if viewer.farewell is not None:  # dropped: its last line has its own deadline
                await asyncio.wait({viewer.farewell}, timeout=BYE_TIMEOUT_S + 1)
        finally:
            tasks = [t for t in (sending, reading, viewer.farewell) if t is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.viewers.discard(viewer)
            _end(writer)
            self._say(f"viewer {viewer.number} left ({len(self.viewers)} now)")

    async def _write(self, viewer: Viewer, first: list[bytes]) -> None:
        writer = viewer.writer
        try:
            for line in first:
                await _put(writer, line, WRITE_TIMEOUT_S)
            while True:
                await _put(writer, await viewer.queue.get(), WRITE_TIMEOUT_S)
        except TimeoutError:
            if viewer.closing is None:
                viewer.closing = f"it took nothing for {WRITE_TIMEOUT_S:g} s"
                self._say(f"viewer {viewer.number} ({viewer.who}) closed: {viewer.closing}")
                _end(writer)  # ends the reader side too
        except (ConnectionError, OSError, RuntimeError):
            return

    async def _read(self, viewer: Viewer, reader: asyncio.StreamReader) -> None:
        while viewer.closing is None:
            try:
                line = await reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self.drop(viewer, f"it sent a line over {wire.MAX_FROM_VIEWER} bytes")
                return
            except (ConnectionError, OSError):
                return
            if not line:
                return
            try:
                doc = wire.decode(line, f"viewer {viewer.number}")
            except ParseError as exc:
                self.drop(viewer, f"it sent {str(exc).split(': ', 1)[-1]}")
                return
            if doc["t"] != "mark" or not isinstance(doc.get("text"), str):
                kind = json.dumps(doc["t"])[:40]
                self.drop(viewer, f"it sent a line of type {kind}; viewers send markers only")
                return
            if not viewer.markers.take():
                per_minute = 60 / MARKER_EVERY_S
                self.drop(viewer, f"it sent markers faster than {per_minute:g} a minute")
                return
            if self._all_markers is None:
                self._all_markers = Bucket(ALL_MARKER_BURST, ALL_MARKER_EVERY_S, _monotonic)
            if not self._all_markers.take():
                self._refuse_marker()
                continue
            self._on_marker(doc["text"], viewer.who)

    def _refused(self, line: str) -> None:
        # Said, but a flood of refused connections does not become a flood of lines in the log.
        if self._refusals is None:
            self._refusals = Bucket(REFUSALS_SAID_BURST, REFUSED_SAID_EVERY_S, _monotonic)
        if not self._refusals.take():
            self._unsaid += 1
            return
        more = f" ({self._unsaid} more refused, not said)" if self._unsaid else ""
        self._unsaid = 0
        self._say(line + more)

    def _refuse_marker(self) -> None:
        self.refused_markers += 1
        now = _monotonic()
        if now - self._refused_said >= REFUSED_SAID_EVERY_S:
            self._refused_said = now
            rate = 60 / ALL_MARKER_EVERY_S
            self._say(f"markers refused: viewers together sent more than {rate:g} a minute "
                      f"({self.refused_markers} so far)")  # fmt: skip

    async def aclose(self) -> None:
        """Say goodbye to every viewer, then close what is left (each bye has a deadline)."""
        for viewer in list(self.viewers):
            self.drop(viewer, "stopped", bye="pgtop-ha serve stopped")
        pending = {t for t in self._connections if not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=BYE_TIMEOUT_S + 1)
        for task in list(self._connections):
            task.cancel()
        for viewer in list(self.viewers):
            viewer.writer.transport.abort()
