"""The console's timeline wiring: actions stamped when they happen, the banner, the cadence."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from pgtop_ha.ui.widgets.banner import Banner
from pgtop_ha.ui.widgets.heartbeat import Heartbeat
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.models.builders import healthy, writers
from tests.support.clocks import StepClock
from tests.ui import fixtures as fx
from tests.ui.harness import NOW, make_app, settled, still, table, texts, until


async def test_action_done_is_stamped_when_the_result_arrives() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot, app, source)
        sent = app.record_action("switchover node1 → node2", "node2")
        # The audit entry carries the action's start time; the "done" event is now.
        app.record_event(
            fx.event("node2", "alice: switchover ok: node2 leads", at=fx.T0 + timedelta(seconds=1))
        )
        done = app.events[-1]
        assert sent.at == NOW and sent.text == "switchover node1 → node2 (sent)" and sent.source == "action"
        assert done.at == NOW and done.text.endswith("(done)") and done.kind == "action"
        assert app.events.index(sent) < app.events.index(done)


async def test_banner_hidden_when_calm_shown_with_a_disagreement() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        banner = app.screen.query_one(Banner)
        assert not banner.display and banner.region.height == 0
        assert app.cadence() == 1.0 and source.hurried == 0
        source.push(fx.kill_primary())
        await until(pilot, lambda: bool(banner.display), what="banner shown")
        assert source.hurried == 1  # the source's calm pause ends now, not a second later
        line = banner.render().plain
        assert "⚠ node1: PostgreSQL down on the leader, HAProxy still routes writes to it (1s)" in line
        header = app.screen.query_one(Heartbeat).render().plain
        assert "every 0.25s (fast; idle 1s)" in header
        assert app.cadence() == 0.25
        source.push(fx.healthy(fx.T0 + timedelta(seconds=21)))
        # The disagreement is gone; the write outage it was (no leader change) stays timed a while.
        await until(pilot, lambda: "still routes" not in banner.render().plain, what="disagreement gone")
        assert "⏱ no failover: node1 kept the leader · writes down 1.0s" in banner.render().plain
        assert source.intervals[-1] == 0.25  # the poll loop asks the app's cadence


async def test_events_pane_shows_how_long_a_flip_lasted() -> None:
    app, source = make_app([healthy(0), writers(healthy(1)), healthy(3)])
    async with app.run_test(size=(160, 40)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("8")
        await pilot.pause()
        flat = [" ".join(r) for r in texts(app, "events")]
        assert any("2.0 s HAProxy pg_writer/node1 UP → DOWN" in r for r in flat), flat
        assert not any("DOWN → UP" in r for r in flat)


def _holds(events: KeyedTable, rows: int) -> bool:
    return events.row_count == rows


async def test_overview_events_fill_the_pane_newest_first_without_a_scrollbar() -> None:
    # Six fixed events left half of an 80x24 screen empty while a failure test pushed its cause
    # out of view: the events now take every line the pane has left, and the rest is cut.
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        events = table(app, "overview-events")
        pane = app.screen.query_one("#pane-overview")
        for i in range(30):
            # One at a time, each on screen before the next, as a failure test brings them.
            app.mark(f"marker {i}")
            await until(pilot, partial(_holds, events, i + 1), what=f"marker {i} in the table")
        await still(pilot, app)
        inner_bottom = pane.region.y + pane.region.height - 1  # the border's line
        assert events.region.y + events.region.height == inner_bottom
        lines = events.region.height - 1  # its header
        assert lines >= 9, events.region  # a healthy 80x24 overview: members, 4 lines, events
        assert not events.show_vertical_scrollbar and events.scrollable_content_region.width == 78
        shown = [row[2] for row in texts(app, "overview-events")[:lines]]
        assert shown == [f"marker {i}" for i in range(29, 29 - lines, -1)]
        # No Kind column at 80: the Node column says what a DBA's marker is (it said "-").
        assert {row[1] for row in texts(app, "overview-events")} == {"mark"}
        assert events.scroll_y == 0  # the newest on its first line, not scrolled to the oldest


async def test_events_pane_keeps_the_newest_on_top_until_the_dba_moves_down() -> None:
    # The dashboard's Events pane showed steps 7..1 of a failure test while 8..30 had come in:
    # its cursor, on the first event ever shown, kept that row in view.
    app, source = make_app([fx.healthy()])
    app.clock = StepClock(NOW, step=0.01)  # each marker later than the one before, as live
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        events = table(app, "events")
        for i in range(30):
            app.mark(f"step {i}")
            await until(pilot, partial(_holds, events, i + 1), what=f"step {i} in the table")
        await still(pilot, app)
        assert events.region.height < 30  # the pane cannot show them all
        assert events.cursor_row == 0 and events.scroll_y == 0
        assert texts(app, "events")[0][4] == "step 29"
        # Moved down to read one, the cursor stays with it as new events push it down.
        events.focus()
        for _ in range(3):
            await pilot.press("down")
        await until(pilot, lambda: events.cursor_row == 3, what="cursor on row 3")
        reading = texts(app, "events")[3][4]
        app.mark("step 30")
        await until(pilot, partial(_holds, events, 31), what="step 30 in the table")
        assert events.cursor_row == 4 and texts(app, "events")[4][4] == reading
        # Back on the first row, it follows the newest again.
        for _ in range(4):
            await pilot.press("up")
        await until(pilot, lambda: events.cursor_row == 0, what="cursor on the first row")
        app.mark("step 31")
        await until(pilot, partial(_holds, events, 32), what="step 31 in the table")
        await still(pilot, app)
        assert events.cursor_row == 0 and events.scroll_y == 0
        assert texts(app, "events")[0][4] == "step 31"
