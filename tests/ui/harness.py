"""Running the console under Pilot with scripted snapshots, and waiting on conditions (no sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from textual.pilot import Pilot

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.screens.monitor import MonitorScreen
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.support.clocks import fixed_clock
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures as fx

NOW = fx.T0 + timedelta(seconds=21)


def make_app(
    snapshots: Sequence[ClusterSnapshot],
    *,
    settings: Settings | None = None,
    now: datetime = NOW,
) -> tuple[PgtopApp, ScriptedSource]:
    """An app fed ``snapshots`` at once by a scripted source, with a fixed clock."""
    source = ScriptedSource(snapshots)
    app = PgtopApp((settings or fx.settings()).console(), source, clock=fixed_clock(now))
    return app, source


async def until(pilot: Pilot[None], cond: Callable[[], bool], within: float = 5.0, what: str = "") -> None:
    """Let the app run until ``cond()`` holds; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await pilot.pause(0.02)


async def settled(pilot: Pilot[None], app: PgtopApp, source: ScriptedSource) -> None:
    """Wait until every snapshot the source sent is on screen."""
    await until(
        pilot,
        lambda: app.received >= source.sent > 0 and app.snapshot is not None,
        what="snapshots delivered",
    )
    await until(pilot, lambda: app.snapshot is app.history[-1], what="last snapshot shown")
    await pilot.pause()


async def view_shown(pilot: Pilot[None], app: PgtopApp) -> None:
    """Wait until the view just chosen is on screen: its panes filled, its table focused."""

    # A pane not on the first screen mounts its tables a few messages after the key that shows
    # it (Pane.build), then takes the focus: pauses alone race that on a loaded machine.
    def on_screen() -> bool:
        s = screen(app)
        shown = s.visible_panes()
        if app.snapshot is None or not all(s.panes[p].shows(app.snapshot) for p in shown):
            return False
        focused = app.focused
        return focused is not None and focused.parent is s.panes[s.main_pane()]

    await until(pilot, on_screen, what="view on screen")
    await still(pilot, app)


async def still(pilot: Pilot[None], app: PgtopApp, within: float = 5.0) -> None:
    """Wait until two screenshots a moment apart are the same: the screen stopped changing."""
    # Some of Textual's work waits for an idle loop or the next refresh (a table's column
    # widths, the footer's bindings after a focus change): a snapshot taken before it is done
    # differs from the next one, so compare the screen with itself rather than count pauses.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last = app.export_screenshot()
    while True:
        await pilot.pause(0.02)
        shot = app.export_screenshot()
        if shot == last:
            return
        if loop.time() > deadline:
            raise AssertionError("the screen still changes")
        last = shot


def screen(app: PgtopApp) -> MonitorScreen:
    """The monitor screen on top."""
    s = app.screen
    assert isinstance(s, MonitorScreen), type(s)
    return s


def table(app: PgtopApp, spec_id: str) -> KeyedTable:
    """A pane's table by spec id (cluster, haproxy, slots-matrix, ...)."""
    return app.screen.query_one(f"#t-{spec_id}", KeyedTable)


def texts(app: PgtopApp, spec_id: str) -> list[list[str]]:
    """A table's cells as text, in display order."""
    return table(app, spec_id).visible_texts()


def row_of(app: PgtopApp, spec_id: str, first: str) -> list[str]:
    """The row whose first cell is ``first``."""
    for row in texts(app, spec_id):
        if row and row[0] == first:
            return row
    raise AssertionError(f"no row {first!r} in {spec_id}: {texts(app, spec_id)}")
