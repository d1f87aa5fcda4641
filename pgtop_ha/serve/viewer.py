"""`attach`'s side of the stream: the snapshots of a `serve`, as a source for the console."""

from __future__ import annotations

import asyncio
import contextlib
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


class ServeEnded(UserError):
    """The serve closed the stream (stopped, or dropped this viewer)."""


class AttachSource:
    """A serve's stream: hello on connect, then what it holds (handed to ``on_backlog``), then live."""

    def __init__(self, address: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.address = address
        self._reader = reader
        self._writer = writer
        self.hello: dict[str, Any] = {}
        # Set by the app: the events and snapshots the serve held when this viewer came.
        self.on_backlog: Callable[[list[Event], list[ClusterSnapshot]], object] | None = None
        self.on_marker: Callable[[datetime, str, str], object] | None = None

    @classmethod
    async def connect(cls, address: Address) -> AttachSource:
        """Connect and read hello; UserError naming the address and the fix."""
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
        except OSError as exc:
            why = exc.strerror or exc.__class__.__name__
            raise UserError(f"no pgtop-ha serve answers at {address} ({why}); is it running?") from None
        source = cls(address, reader, writer)
        try:
            async with asyncio.timeout(HELLO_TIMEOUT_S):
                doc = await source._next()
        except TimeoutError:
            await source.aclose()
            raise UserError(
                f"{address} said nothing in {HELLO_TIMEOUT_S:g}s; is it a pgtop-ha serve?"
            ) from None
        except UserError:
            await source.aclose()
            raise
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
        try:
            return wire.decode(line, str(self.address))
        except ParseError as exc:
            raise UserError(f"{exc}; is it a pgtop-ha serve?") from None

    async def run(
        self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
    ) -> None:
        """Hand over what the serve held, then each snapshot and marker as it comes (the serve's pace)."""
        events: list[Event] = []
        backlog: list[ClusterSnapshot] = []
        expected = self.hello.get("backlog")
        count = expected if isinstance(expected, int) and expected >= 0 else 0
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
            backlog.append(wire.snapshot_of(doc, str(self.address)))
        if self.on_backlog is not None and (events or len(backlog) > 1):
            self.on_backlog(events, backlog[:-1])
        if backlog:
            on_snapshot(backlog[-1])
        while True:
            doc = pending or await self._next()
            pending = None
            kind = doc["t"]
            if kind == "snap":
                on_snapshot(wire.snapshot_of(doc, str(self.address)))
            elif kind == "mark" and (marker := wire.marker_of(doc)) is not None:
                if self.on_marker is not None:
                    self.on_marker(*marker)
            elif kind == "bye":
                raise ServeEnded(f"{self.address}: {str(doc.get('text'))[:200]}")

    def send_mark(self, text: str, source: str) -> None:
        """Ask the serve to stamp a marker (it comes back to every viewer, this one too)."""
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            self._writer.write(wire.encode("mark", text=text, source=source))

    async def aclose(self) -> None:
        """Close the connection."""
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)
