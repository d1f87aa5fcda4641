"""The fleet screen: every cluster counted by state, the worst in rows, filterable; Enter drills in."""

from __future__ import annotations

import asyncio
import contextlib

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Input, Static

from pgtop_ha.judge.view import FleetCounts, FleetRow, matches
from pgtop_ha.models.text import clean
from pgtop_ha.ui.driver import CalmApp
from pgtop_ha.ui.fleet.rows import COLUMNS, table_row
from pgtop_ha.ui.fleet.source import FleetSource
from pgtop_ha.ui.widgets.keyed_table import KeyedTable


class FleetApp(CalmApp[str | None]):
    """The fleet at a glance; exits with the chosen cluster's scope (Enter) or None (q)."""

    TITLE = "pgtop-ha fleet"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    #status { height: 1; }
    #filter { display: none; height: 3; }
    #filter.shown { display: block; }
    KeyedTable { height: 1fr; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, source: FleetSource, *, filter_text: str = "") -> None:
        super().__init__()
        self.source = source
        self.rows: list[FleetRow] = []
        self.counts = FleetCounts()
        self.warnings: tuple[str, ...] = ()
        self.ranked_by = ""  # recorded rules or live PromQL, as the last refresh said
        self.filter_text = filter_text
        self._wake = asyncio.Event()  # a new filter: refresh now, not at the next interval
        self.error: str | None = None
        self.refreshes = 0
        self.answered_for = ""  # the filter the rows on screen were asked with
        self._poller: asyncio.Task[None] | None = None

    def compose(self) -> ComposeResult:
        """Status line, filter input, the table, the footer."""
        yield Static(Text("connecting to Prometheus…"), id="status")
        yield Input(placeholder="filter clusters (Enter to apply, Esc to clear)", id="filter")
        yield KeyedTable(COLUMNS, id="clusters")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the table (not the hidden filter) and start the refresh loop."""
        self.query_one(KeyedTable).focus()
        self._poller = asyncio.create_task(self._refresh_loop())

    async def _refresh_loop(self) -> None:
        interval = 5.0
        with contextlib.suppress(Exception):
            interval = await self.source.interval()
        while True:
            self._wake.clear()
            asked = self.filter_text
            try:
                page = await self.source.refresh(asked)
            except Exception as exc:  # any failure is shown as one line; the last rows stay
                lines = str(exc).splitlines()
                self.error = clean(lines[0])[:200] if lines else type(exc).__name__
            else:
                self.error = None
                self.rows, self.counts, self.warnings = page.rows, page.counts, page.warnings
                self.ranked_by = page.source
                self.answered_for = asked
            self.refreshes += 1
            self._render_rows()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), interval)

    def _visible(self) -> list[FleetRow]:
        return [r for r in self.rows if matches(r, self.filter_text)]

    def status(self, shown: int) -> str:
        """Every cluster accounted for: counts by state, then what the table holds."""
        c = self.counts
        noun = "cluster" if c.total == 1 else "clusters"
        status = f"{c.total:,} {noun}: {c.ok:,} ok · {c.warn:,} warn · {c.crit:,} crit"
        if self.answered_for:
            status += f" (filter: {self.answered_for})"
        if self.filter_text != self.answered_for:
            status += f"; asking Prometheus for {self.filter_text or 'every cluster'}…"
        if c.total > shown:
            status += f"; the {shown:,} worst shown"
        if self.ranked_by:
            status += f"; {self.ranked_by}"
        if self.warnings:
            status += f"; Prometheus warns: {self.warnings[0]}"
        return status

    def _render_rows(self) -> None:
        visible = self._visible()
        status = self.status(len(visible))
        if self.error:
            kept = "showing the last answer" if self.rows else "no answer yet"
            status = f"Prometheus: {self.error} ({kept})"
        self.query_one("#status", Static).update(Text(status))
        # Only changed cells are written; rows that came, went or moved are placed again.
        self.query_one(KeyedTable).apply([table_row(r) for r in visible])

    def action_filter(self) -> None:
        """Show the filter input."""
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter."""
        box = self.query_one("#filter", Input)
        box.remove_class("shown")
        self.filter_text = ""
        self.query_one(KeyedTable).focus()
        self._render_rows()
        self._wake.set()

    @on(Input.Submitted, "#filter")
    def _apply_filter(self, event: Input.Submitted) -> None:
        self.filter_text = clean(event.value)[:80]
        event.input.remove_class("shown")
        self.query_one(KeyedTable).focus()
        self._render_rows()  # the rows at hand at once; Prometheus narrows the whole fleet next
        self._wake.set()

    @on(KeyedTable.Chosen)
    def _drill(self, event: KeyedTable.Chosen) -> None:
        self.exit(event.key)

    async def on_unmount(self) -> None:
        """Stop the loop, close the source."""
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(BaseException):
                await self._poller
        with contextlib.suppress(Exception):
            await self.source.aclose()
