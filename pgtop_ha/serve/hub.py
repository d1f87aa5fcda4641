"""The viewers of one `serve`: each gets hello, what the server holds, then every line as it comes.

Each viewer has its own bounded queue: one that falls behind is dropped with a line saying so, and
never slows the poller or the others. A viewer may send markers and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.models.text import clean
from pgtop_ha.serve import wire

QUEUE = 64  # lines a viewer may be behind before it is dropped
BACKLOG = 600  # snapshots kept for a viewer that comes late
BACKLOG_BYTES = 256 * 1024**2
BYE_TIMEOUT_S = 5.0  # a dropped viewer gets this long to take its last line


@dataclass(eq=False)
class Viewer:
    """One attached viewer: its queue and its writer."""

    number: int
    writer: asyncio.StreamWriter
    queue: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(QUEUE))
    closing: str | None = None


class Hub:
    """Every attached viewer, the backlog, and the lines to all of them."""

    def __init__(
        self,
        hello: dict[str, Any],
        events: Callable[[], bytes],
        on_marker: Callable[[str, str], object],
        say: Callable[[str], None],
    ) -> None:
        self._hello = hello
        self._events = events
        self._on_marker = on_marker
        self._say = say
        self.viewers: set[Viewer] = set()
        self.backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._numbers = 0

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
                self.drop(viewer, f"it fell {QUEUE} lines behind")

    def drop(self, viewer: Viewer, why: str) -> None:
        """Stop sending to ``viewer``: its last line says why, then it is closed."""
        if viewer.closing is not None:
            return
        viewer.closing = why
        self._say(f"viewer {viewer.number} dropped: {why}")
        while not viewer.queue.empty():
            viewer.queue.get_nowait()
        viewer.queue.put_nowait(wire.encode("bye", text=f"dropped by pgtop-ha serve: {why}"))
        viewer.queue.put_nowait(None)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One viewer's connection, from hello to its end."""
        self._numbers += 1
        viewer = Viewer(self._numbers, writer)
        # What the viewer gets first is taken now, with it registered in the same step: no line
        # falls between the backlog and the live stream.
        hello = wire.encode("hello", version=wire.VERSION, backlog=len(self.backlog), **self._hello)
        first = [hello, self._events(), *self.backlog]
        self.viewers.add(viewer)
        self._say(f"viewer {viewer.number} attached ({len(self.viewers)} now)")
        sending = asyncio.create_task(self._write(viewer, first), name=f"viewer-{viewer.number}")
        try:
            await self._read(viewer, reader)
        finally:
            self.viewers.discard(viewer)
            if viewer.closing is None:
                viewer.closing = "gone"
                sending.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, OSError):
                await asyncio.wait_for(sending, BYE_TIMEOUT_S)
            writer.close()
            with contextlib.suppress(OSError, TimeoutError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)
            self._say(f"viewer {viewer.number} left ({len(self.viewers)} now)")

    async def _write(self, viewer: Viewer, first: list[bytes]) -> None:
        writer = viewer.writer
        try:
            for line in first:
                writer.write(line)
                await writer.drain()
            while (queued := await viewer.queue.get()) is not None:
                writer.write(queued)
                await writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            if viewer.closing is not None and viewer.closing != "gone":
                writer.close()  # ends the reader side too

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
            source = doc.get("source")
            self._on_marker(doc["text"], clean(source)[:60] if isinstance(source, str) else "viewer")

    async def aclose(self) -> None:
        """Say goodbye to every viewer."""
        for viewer in list(self.viewers):
            self.drop(viewer, "pgtop-ha serve stopped")
