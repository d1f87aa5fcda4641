"""The floor: the least a console on the prescribed stack costs to read and show the cluster each second.

pgtop-ha is asked to cost less than pg_activity (issue 10) while it reads five sources a second
where pg_activity reads one, on a stack the project prescribes (Textual, asyncpg, httpx). This
script measures what that stack costs with nothing of pgtop-ha's own on top, so a figure of the
console can be read against what no console of this stack can go below:

- ``poll``: each interval, on uvloop (the console's loop), what the overview must show fresh:
  Patroni's ``/cluster`` (a new connection each time: Patroni closes after each answer), each
  member's PostgreSQL document (the console's own light statement on a kept asyncpg connection)
  and HAProxy's ``show stat`` on its socket; each answer only parsed (json.loads, CSV lines), no
  models, no checks, no history.
- ``screen``: a Textual app in the terminal whose one header line changes each second (the
  console's heartbeat), below it a table of 12 rows that never change.
- ``both``: the two in one process, the header line counting what was read.
- ``calm``: the reads and the screen in one process, the header line changing once a minute
  (``HH:MM``), as a calm console's header does: the reads each second reach the app and change
  nothing on screen. The floor of a calm 80x24 overview, which draws no frame in most seconds.
- ``shown``: the reads, and what they returned in Textual's stock DataTable: a row per member,
  HAProxy server, walsender, slot and process (its first values), a cell written
  (``update_cell``) only when its text changed. Not a floor but the stack's stock way of showing
  the same rows: under ``lab fault load`` they change each second, as the console's do.

Run by ``bench/console_cpu.py --floor`` in the same windows as the console and pg_activity; by
hand: ``.venv/bin/python bench/floor.py --config /tmp/lab/pgtop-ha.toml --what both`` in a
terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

WHAT = ("poll", "screen", "both", "calm", "shown")
WIDTH = 7  # cells of a ``shown`` row: where it came from, what it is, its first five values
Cells = tuple[str, ...]


class Reads:
    """The three reads of a cycle on the prescribed libraries, and what they returned."""

    def __init__(self, config: Path) -> None:
        from pgtop_ha.settings import load_settings

        self.settings = load_settings(config, environ={})
        self.conns: list[Any] = []
        self.http: Any = None
        self.sql: list[str] = []
        self.bytes = 0
        self.cycles = 0
        self.rows: dict[str, Cells] = {}  # what the last cycle read, a row each (``shown``)

    async def open(self) -> None:
        """Find the members once from /cluster and open one kept connection to each."""
        import asyncpg

        from pgtop_ha.collect.pgquery import PROBE_SQL, Capabilities, build_query

        pg = self.settings.postgres
        cluster = await self._cluster()
        for member in cluster.get("members", []):
            conn = await asyncpg.connect(
                host=member["host"],
                port=member["port"],
                user=pg.user,
                database=pg.dbname,
                passfile=str(pg.passfile) if pg.passfile else None,
                statement_cache_size=8,
            )
            caps = Capabilities.from_row(await conn.fetchrow(PROBE_SQL))
            self.conns.append(conn)
            self.sql.append(build_query(caps, remote_memory=False, slow=False))

    async def _cluster(self) -> dict[str, Any]:
        import httpx

        if self.http is None:
            # One client for the run (a client builds its TLS context, ~30 ms); Patroni's HTTP/1.0
            # server still closes each connection, so each GET connects anew, as the console's.
            self.http = httpx.AsyncClient(timeout=2.0)
        answer = await self.http.get(self.settings.patroni.urls[0].rstrip("/") + "/cluster")
        self.bytes += len(answer.content)
        parsed: dict[str, Any] = json.loads(answer.content)
        for member in parsed.get("members", []):
            self._row("cluster", "member", member)
        return parsed

    def _row(self, where: str, what: str, values: dict[str, Any] | list[Any]) -> None:
        listed = list(values.values()) if isinstance(values, dict) else values
        cells = (where, what, *(str(v)[:14] for v in listed[: WIDTH - 2]))
        cells = (cells + ("",) * WIDTH)[:WIDTH]
        key = f"{where}|{what}|{cells[2]}"  # by its first value: a pid, a slot's or member's name
        while key in self.rows:
            key += "+"
        self.rows[key] = cells

    async def _document(self, index: int) -> None:
        text = await self.conns[index].fetchval(self.sql[index])
        self.bytes += len(text)
        document = json.loads(text)
        for what in ("replication", "slots", "processes"):
            for entry in document.get(what) or ():
                self._row(f"pg{index}", what, entry)

    async def _haproxy(self) -> None:
        socket = self.settings.haproxy.socket
        if socket is None:
            return
        reader, writer = await asyncio.open_unix_connection(str(socket))
        writer.write(b"show stat\n")
        data = await reader.read(-1)
        writer.close()
        self.bytes += len(data)
        for line in data.decode().splitlines()[1:]:
            if line:
                fields = line.split(",")
                if len(fields) > 36:
                    self._row("haproxy", fields[1], [fields[0], fields[17], fields[4], fields[7], fields[36]])

    async def cycle(self) -> None:
        """One cycle: every read at once, as the console's poller does."""
        self.rows = {}
        await asyncio.gather(
            self._cluster(), self._haproxy(), *(self._document(i) for i in range(len(self.conns)))
        )
        self.cycles += 1

    async def forever(self, interval: float, then: Any = None) -> None:
        """A cycle every ``interval`` seconds, on the monotonic clock; ``then()`` after each."""
        await self.open()
        began = time.monotonic()
        while True:
            await self.cycle()
            if then is not None:
                then()
            await asyncio.sleep(interval - (time.monotonic() - began) % interval)


def screen_app(reads: Reads | None, interval: float, shown: bool = False, calm: bool = False) -> Any:
    """The app of ``screen``, ``both`` and ``shown``: a line that changes each second, a table."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Static

    class Floor(App[None]):
        def compose(self) -> ComposeResult:
            yield Static(id="header")
            yield DataTable()

        def on_mount(self) -> None:
            table = self.query_one(DataTable)
            self.shown: dict[str, Cells] = {}
            self.columns = table.add_columns("from", "what", *(f"v{i}" for i in range(WIDTH - 2)))
            if not shown:
                for i in range(12):
                    table.add_row(f"node{i}", "replica", "streaming", "3", "0 B", "UP", "")
            if reads is not None:
                self.run_worker(reads.forever(interval, self.show if shown else None))
            self.set_interval(interval, self.tick)

        def show(self) -> None:
            # Textual's stock way: a cell written only when its text changed, rows added and removed.
            assert reads is not None
            table = self.query_one(DataTable)
            for key in [k for k in self.shown if k not in reads.rows]:
                table.remove_row(key)
                del self.shown[key]
            for key, cells in reads.rows.items():
                before = self.shown.get(key)
                if before is None:
                    table.add_row(*cells, key=key)
                else:
                    for column, old, new in zip(self.columns, before, cells, strict=True):
                        if old != new:
                            table.update_cell(key, column, new)
                self.shown[key] = cells

        def tick(self) -> None:
            if calm:
                # A calm console's header: the minute, written only when it changes.
                text = time.strftime("%H:%M")
                if text != getattr(self, "last", None):
                    self.last = text
                    self.query_one("#header", Static).update(text)
                return
            read = f"{reads.cycles} cycles, {reads.bytes} bytes" if reads is not None else ""
            self.query_one("#header", Static).update(f"{time.strftime('%H:%M:%S')}  {read}")

    return Floor()


def main() -> int:
    """Run one floor until killed (the benchmark ends its tmux session)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="the lab's pgtop-ha.toml")
    p.add_argument("--what", choices=WHAT, default="both")
    p.add_argument("--interval", type=float, default=1.0)
    args = p.parse_args()
    from pgtop_ha import runtime

    if args.what == "poll":
        runtime.run(Reads(args.config).forever(args.interval))
    else:
        runtime.run_app(
            screen_app(
                Reads(args.config) if args.what in ("both", "calm", "shown") else None,
                args.interval,
                shown=args.what == "shown",
                calm=args.what == "calm",
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
