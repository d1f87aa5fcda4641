"""`attach`'s side of the stream: the snapshots of a `serve`, as a source for the console."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.errors import UserError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.serve import wire
from pgtop_ha.serve.address import Address

HELLO_TIMEOUT_S = 10.0
BACKLOG = 600  # snapshots taken from what a serve holds, whatever it announces (as many as it keeps)
BACKLOG_BYTES = 128 * 1024**2  # of their lines: beyond it the oldest are let go
MIN_GAP_S = 0.1  # live snapshots handled at most this often: a flooding peer cannot starve the screen


class ServeEnded(UserError):
    """The serve closed the stream (stopped, or dropped this viewer)."""


class AttachSource:
    """A serve's stream: hello on connect, then what it holds (handed to ``on_backlog``), then live."""

    def __init__(self, address: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer
        self.hello: dict[str, Any] = {}
        self._last_size = 0
        # Set by the app: the events and snapshots the serve held when this viewer came.
        self.on_backlog: Callable[[list[Event], list[ClusterSnapshot]], object] | None = None
        self.on_marker: Callable[[datetime, str, str], object] | None = None

    @classmethod
    async def connect(cls, address: Address, token: str | None = None) -> AttachSource:
        """Connect (over TCP, send ``token`` first) and read hello; UserError naming the address and fix."""
        limit = wire.MAX_FROM_SERVER
        try:
            if address.path is not None:
                reader, writer = await asyncio.open_unix_connection(address.path, limit=limit)
            else:
                reader, writer = await asyncio.open_connection(address.host, address.port, limit=limit)
        except FileNotFoundError:
            raise UserError(
                f"no pgtop-ha serve at {address} (no such socket); start `pgtop-ha serve`"
            ) from None
        except PermissionError:
            raise UserError(f"{address}: permission denied; ask for the serve's --group") from None
        except BlockingIOError:
            raise UserError(
                f"the serve at {address} is busy (its queue of new viewers is full); try again"
            ) from None
        except OSError as exc:
            why = exc.strerror or exc.__class__.__name__
            raise UserError(f"no pgtop-ha serve answers at {address} ({why}); is it running?") from None
        source = cls(address, reader, writer)
        if address.path is None:
            writer.write(wire.encode("auth", token=token or ""))
        try:
            async with asyncio.timeout(HELLO_TIMEOUT_S):
                doc = await source._next()
        except ServeEnded:
            await source.aclose()
            if address.path is None:
                raise UserError(
                    f"the serve at {address} closed the connection: its token is wrong or missing; "
                    "give --token-file with the file serve wrote beside its socket"
                ) from None
            raise
        except TimeoutError:
            await source.aclose()
            raise UserError(
                f"{address} said nothing in {HELLO_TIMEOUT_S:g}s; is it a pgtop-ha serve?"
            ) from None
        except UserError:
            await source.aclose()
            raise
        if doc["t"] == "bye":
            await source.aclose()
            raise UserError(f"{address}: {str(doc.get('text'))[:200]}")
        if doc["t"] != "hello" or doc.get("version") != wire.VERSION:
            await source.aclose()
            raise UserError(
                f"{address} speaks stream version {doc.get('version')!r}, this pgtop-ha {wire.VERSION}: "
                "run the same pgtop-ha version on both ends"
            )
        source.hello = doc
        return source

    async def _next(self) -> dict[str, Any]:
        try:
            line = await self._reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            raise UserError(f"{self.address} sent a line over {wire.MAX_FROM_SERVER} bytes") from None
        except (ConnectionError, OSError) as exc:
            raise ServeEnded(f"the serve at {self.address} went away ({exc.__class__.__name__})") from None
        if not line.endswith(b"\n"):
            raise ServeEnded(f"the serve at {self.address} closed the stream")
        self._last_size = len(line)
        await asyncio.sleep(0)  # lines already buffered do not hold the screen: it gets its turn
        try:
            return wire.decode(line, str(self.address))
        except ParseError as exc:
            raise UserError(f"{exc}; is it a pgtop-ha serve?") from None

    async def run(
        self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
    ) -> None:
        """Hand over what the serve held, then each snapshot and marker as it comes (the serve's pace)."""
        events: list[Event] = []
        backlog: deque[tuple[ClusterSnapshot, int]] = deque()
        held = 0
        expected = self.hello.get("backlog")
        # What the serve announces is a claim, not a size to allocate: no more than a serve keeps.
        count = min(expected, BACKLOG) if isinstance(expected, int) and expected >= 0 else 0
        first = await self._next()
        pending: dict[str, Any] | None = first
        if first["t"] == "events":
            events, pending = wire.events_of(first), None
        for _ in range(count):
            doc = pending or await self._next()
            pending = None
            if doc["t"] != "snap":
                pending = doc
                break
            size = self._last_size
            backlog.append((wire.snapshot_of(doc, str(self.address)), size))
            held += size
            while held > BACKLOG_BYTES and len(backlog) > 1:
                held -= backlog.popleft()[1]
        before = [snap for snap, _ in backlog]
        if self.on_backlog is not None and (events or len(before) > 1):
            self.on_backlog(events, before[:-1])
        if before:
            on_snapshot(before[-1])
        del backlog, before
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            doc = pending or await self._next()
            pending = None
            kind = doc["t"]
            if kind == "snap":
                if (wait := last + MIN_GAP_S - loop.time()) > 0:
                    await asyncio.sleep(wait)
                last = loop.time()
                on_snapshot(wire.snapshot_of(doc, str(self.address)))
            elif kind == "mark" and (marker := wire.marker_of(doc)) is not None:
                if self.on_marker is not None:
                    self.on_marker(*marker)
            elif kind == "bye":
                raise ServeEnded(f"{self.address}: {str(doc.get('text'))[:200]}")

    def send_mark(self, text: str) -> None:
        """Ask the serve to stamp a marker under this viewer's identity (it comes back to every viewer)."""
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._writer.write(wire.encode("mark", text=text))

    async def aclose(self) -> None:
        """Close the connection."""
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)
