"""A KeyedTable repaints only the rows whose cells changed, and keeps its box while rows flap."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip

from pgtop_ha.ui.panes.base import Cell, Column, Row
from pgtop_ha.ui.widgets import keyed_table
from pgtop_ha.ui.widgets.keyed_table import KeyedTable, cell_line

COLUMNS = (Column("name", "Name"), Column("total", "Total", right=True))


def rows(total_of_row_3: str) -> list[Row]:
    return [
        Row(key=f"r{i}", cells={"name": Cell(f"row {i}"), "total": Cell(total_of_row_3 if i == 3 else "10")})
        for i in range(12)
    ]


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="t")


class CountingTable(KeyedTable):
    """Counts the lines rendered, to see what a cell change repaints."""

    rendered = 0

    def render_line(self, y: int) -> Strip:
        CountingTable.rendered += 1
        return super().render_line(y)


class CountingApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CountingTable(COLUMNS, id="t")


async def showing_tens(app: App[None], pilot: Pilot[None]) -> KeyedTable:
    """The app's table with every total at "10", painted."""
    table = app.query_one(KeyedTable)
    table.apply(rows("10"))
    await pilot.pause()
    return table


async def test_one_changed_cell_repaints_its_row_not_the_table() -> None:
    app = CountingApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(CountingTable)
        assert table.apply(rows("10")) == 24
        await pilot.pause()
        CountingTable.rendered = 0
        assert table.apply(rows("11")) == 1  # same width: no layout pass
        await pilot.pause()
        assert table.visible_texts()[3] == ["row 3", "11"]
        # One row (and at most the line a partial update rounds to), not the 13 lines of the table.
        assert 1 <= CountingTable.rendered <= 2
        CountingTable.rendered = 0
        assert table.apply(rows("11")) == 0  # nothing changed: nothing written, nothing repainted
        await pilot.pause()
        assert CountingTable.rendered == 0


async def test_a_wider_value_still_widens_its_column() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = await showing_tens(app, pilot)
        before = table.content_width("total")
        table.apply(rows("123456789"))
        await pilot.pause()
        after = table.content_width("total")
        assert (before, after) == (5, 9)
        assert table.visible_texts()[3] == ["row 3", "123456789"]


async def test_a_changed_cell_renders_alone_and_its_row_shows_the_new_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DataTable's caches are keyed by a table-wide counter: bumping it would render all of the
    # row's cells again. Only the new cell is rendered; the painted line has its new text.
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = await showing_tens(app, pilot)
        assert "10" in table.render_line(4).text  # header, then rows 0..3
        console = app.console
        render_lines = console.render_lines
        cells: list[str] = []
        through_rich: list[str] = []

        def drawing(*args: Any) -> Any:
            line = cell_line(*args)
            cells.append("".join(s.text for s in line or ()).strip())
            return line

        def counting(renderable: Any, *args: Any, **kwargs: Any) -> Any:
            lines = render_lines(renderable, *args, **kwargs)
            through_rich.append("".join(s.text for s in lines[0]).strip())
            return lines

        monkeypatch.setattr(keyed_table, "cell_line", drawing)
        monkeypatch.setattr(console, "render_lines", counting)
        assert table.apply(rows("11")) == 1
        await pilot.pause()
        monkeypatch.undo()
        line = table.render_line(4).text
        assert "row 3" in line and "11" in line and "10" not in line
        # The new cell only (a frame may paint it more than once), never "row 3" again, and
        # drawn without rich's layout (cell_line), which is the point of the fast path.
        assert cells and set(cells) == {"11"}
        assert through_rich == []


async def test_the_same_row_objects_are_skipped_and_a_restyle_still_rewrites_them() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = await showing_tens(app, pilot)
        same = rows("10")
        assert table.apply(same) == 0 and table.apply(same) == 0
        table.use_level_styles({})  # a theme change must rewrite even rows that are the same objects
        assert table.apply(same) == 24


async def test_the_very_rows_shown_last_time_are_skipped_without_a_look_at_the_cursor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Cached row builders (panes/base.py) hand back the same Row objects on a quiet cluster:
    # the table returns at once. The same rows in another order are still reordered.
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        shown = rows("10")
        table.apply(shown)
        await pilot.pause()
        looked: list[str | None] = []
        cursor_key = KeyedTable._cursor_key

        def looking(self: KeyedTable) -> str | None:
            looked.append(key := cursor_key(self))
            return key

        monkeypatch.setattr(KeyedTable, "_cursor_key", looking)
        assert table.apply(list(shown)) == 0
        assert looked == []
        assert table.apply(list(reversed(shown))) == 0  # nothing written, but moved
        await pilot.pause()
        assert looked and [t[0] for t in table.visible_texts()][:2] == ["row 11", "row 10"]


async def test_a_column_shrinks_back_once_its_widest_value_has_gone_for_a_while() -> None:
    # After an incident the overview's Patroni column kept the width of "REST slow 2s" for good.
    # Under load widths change every second: a column narrows only after SHRINK_AFTER_S.
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = await showing_tens(app, pilot)
        now = [1000.0]
        table.clock = lambda: now[0]
        table.apply(rows("123456789"))
        await pilot.pause()
        assert table.content_width("total") == 9
        table.apply(rows("12"))  # the widest value becomes narrower
        await pilot.pause()
        assert table.content_width("total") == 9  # not yet: it may come back
        now[0] += keyed_table.SHRINK_AFTER_S / 2
        table.apply(rows("123456789"))  # back within the delay: the wait starts again
        table.apply(rows("12"))
        now[0] += keyed_table.SHRINK_AFTER_S - 1
        table.apply(rows("12"))
        await pilot.pause()
        assert table.content_width("total") == 9
        now[0] += 1
        table.apply(rows("12"))  # the same rows: the narrowing is still done
        await pilot.pause()
        assert table.content_width("total") == 5  # the label "Total"
        assert table.visible_texts()[3] == ["row 3", "12"]
        wide = [*rows("10"), Row(key="extra", cells={"name": Cell("a much longer name"), "total": Cell("1")})]
        table.apply(wide)
        await pilot.pause()
        assert table.content_width("name") == len("a much longer name")
        table.apply(rows("10"))  # the row holding the widest value is removed
        now[0] += keyed_table.SHRINK_AFTER_S
        table.apply(rows("10"))
        await pilot.pause()
        assert table.content_width("name") == len("row 10")


class PaneApp(App[None]):
    """A table in a box of 8 lines, as a dashboard pane holds one."""

    CSS = "#box { height: 8; border: round white; } #other { height: 1fr; }"

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical
        from textual.widgets import Static

        with Vertical(id="box"):
            yield KeyedTable(COLUMNS, id="t")
        yield Static("below", id="other")


async def no_more_layouts(pilot: Pilot[None], layouts: list[int]) -> None:
    """Wait until a screen update goes by without laying the screen out."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        seen = len(layouts)
        await pilot.pause(0.05)  # a few of the screen's updates (60 a second)
        if len(layouts) == seen:
            return
    raise AssertionError("the screen kept laying itself out")


def many(n: int, total: str = "10") -> list[Row]:
    return [Row(key=f"r{i}", cells={"name": Cell(f"row {i}"), "total": Cell(total)}) for i in range(n)]


async def test_rows_that_come_and_go_in_a_full_box_do_not_lay_the_screen_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Under load a problem that comes and goes, or a column that widens, laid the whole screen out
    # (25-50 ms at 160x48) every few seconds (issue 10). A table whose rows overflow its box before
    # and after keeps its box: only the table and its scrollbar are drawn again. A box whose rows
    # went away keeps its height and scrollbar for SHRINK_AFTER_S, as a column keeps its width,
    # once a row has come back after going (rows that flap).
    from textual.screen import Screen

    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        table.apply(many(12))
        await pilot.pause()
        box = table.region
        assert table.show_vertical_scrollbar and box.height == 6  # 8 lines less the border
        layouts: list[int] = []
        refresh_layout = Screen._refresh_layout

        def counting(screen: Screen[None], *args: Any, **kwargs: Any) -> None:
            layouts.append(1)
            refresh_layout(screen, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", counting)
        await no_more_layouts(pilot, layouts)  # the first fill's layout may still be on its way
        layouts.clear()
        now = [1000.0]
        table.clock = lambda: now[0]
        table.apply(many(15))  # rows added
        await pilot.pause()
        table.apply(many(9))  # rows removed, still more than the box shows
        await pilot.pause()
        table.apply(many(9, "123456789"))  # a column widens within the pane's width
        await pilot.pause()
        assert layouts == []
        assert table.region == box and table.virtual_size.height == 10  # header and 9 rows
        assert table.vertical_scrollbar.window_virtual_size == 10  # the thumb follows the rows
        assert table.visible_texts()[8] == ["row 8", "123456789"]
        assert "123456789" in table.render_line(1).text
        for n in (10, 9, 12, 9, 12):  # rows that went come back, again and again: they flap
            table.apply(many(n, "123456789"))
            await pilot.pause()
        table.apply(many(3))  # now the rows fit, but the box and its scrollbar stay a while
        await pilot.pause()
        assert layouts == [] and table.region == box and table.show_vertical_scrollbar
        assert table.visible_texts() == [["row 0", "10"], ["row 1", "10"], ["row 2", "10"]]
        table.apply(many(5))  # a problem back within the kept box: still nothing laid out
        await pilot.pause()
        table.apply(many(3))
        await pilot.pause()
        assert layouts == [] and table.region == box
        table.apply(many(12))  # the box was as tall as its pane allows: the rows scroll in it
        await pilot.pause()
        assert layouts == [] and table.region == box and table.show_vertical_scrollbar
        table.apply(many(3))
        await pilot.pause()
        assert layouts == []
        now[0] += keyed_table.SHRINK_AFTER_S
        table.apply(many(3))  # fewer rows for long enough: the box shrinks, in one layout
        await pilot.pause()
        assert layouts and table.region.height == 4 and not table.show_vertical_scrollbar
        layouts.clear()
        table.apply(many(3, "123456789012"))  # rows that fit, a wider column: the same box
        await pilot.pause()
        assert layouts == [] and table.region.height == 4
        assert table.visible_texts()[2] == ["row 2", "123456789012"]
        table.apply(many(2))  # a row fewer, long after the last flap: the box follows at once
        await pilot.pause()
        assert layouts and table.region.height == 3
        table.apply(many(12))  # more rows than the box holds: it grows at once
        await pilot.pause()
        assert layouts and table.region == box and table.show_vertical_scrollbar
        for _ in range(2):  # and they flap
            table.apply(many(3))
            await pilot.pause()
            table.apply(many(12))
            await pilot.pause()
        await no_more_layouts(pilot, layouts)  # a box that grows is laid out, then its scrollbar
        layouts.clear()
        table.apply(many(3))
        await pilot.pause()
        assert layouts == [] and table.region == box  # kept again
        app.query_one("#box").styles.height = 7  # its pane changes size (a resized terminal)
        await pilot.pause()
        table.apply(many(3))  # the kept box is let go at once: the rows' own height
        await pilot.pause()
        assert table.region.height == 4 and not table.show_vertical_scrollbar
        table.apply(many(9, "9" * 70))  # wider than the pane: a horizontal scrollbar, a layout
        await pilot.pause()
        assert layouts and table.show_horizontal_scrollbar


async def test_rows_that_go_once_shrink_the_box_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # After a failover the overview's problems resolved and their box kept its height for 30 s:
    # blank lines at 80x24 where the newest events would be read. Only rows that flap keep it.
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        now = [1000.0]
        table.clock = lambda: now[0]
        table.apply(many(4))
        await pilot.pause()
        assert table.region.height == 5  # the header and 4 rows
        now[0] += 20
        table.apply(many(2))  # two problems resolved
        await pilot.pause()
        assert table.region.height == 3 and table.visible_texts() == [["row 0", "10"], ["row 1", "10"]]
        now[0] += 5
        table.apply(many(3))  # one of them back within SHRINK_AFTER_S, as while a failover settles
        await pilot.pause()
        assert table.region.height == 4
        table.apply(many(2))  # gone again: still no blank line
        await pilot.pause()
        assert table.region.height == 3
        for _ in range(keyed_table.FLAPS - 1):  # back and gone again and again: it flaps
            table.apply(many(3))
            await pilot.pause()
            table.apply(many(2))
            await pilot.pause()
        assert table.region.height == 4  # now the box keeps its height a while
        now[0] += keyed_table.SHRINK_AFTER_S
        table.apply(many(2))
        await pilot.pause()
        assert table.region.height == 3


async def test_rows_that_churn_keep_the_box_though_no_row_comes_back() -> None:
    # Under load the Memory pane's processes start and end (new pids each time): no row comes
    # back, but the rows are fewer then more again, and each shrink laid the screen out.
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        now = [1000.0]
        table.clock = lambda: now[0]

        def pids(first: int, n: int) -> list[Row]:
            return [
                Row(key=f"pid{first + i}", cells={"name": Cell(f"pid {first + i}"), "total": Cell("1")})
                for i in range(n)
            ]

        first = 0
        for n in (4, 2) + (3, 2) * keyed_table.FLAPS:
            first += 10  # every process new
            table.apply(pids(first, n))
            await pilot.pause()
            now[0] += 1
        assert table.region.height == 4  # kept at three rows' height: they flap


async def test_changed_rows_are_marked_for_repaint_where_they_are_in_view() -> None:
    # A value written in place marks its row's line, scrolled or not; a row out of view is not marked.
    app = PaneApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(KeyedTable)
        table.apply(many(20))
        await pilot.pause()
        for scroll in (0, 7):
            table.scroll_to(y=scroll, animate=False, immediate=True)
            await pilot.pause()
            marked: list[Region] = []
            refresh = table.refresh

            def marking(
                *regions: Region, marked: list[Region] = marked, refresh: Any = refresh, **how: Any
            ) -> KeyedTable:
                marked.extend(regions)
                return refresh(*regions, **how)  # type: ignore[no-any-return]

            table.refresh = marking  # type: ignore[method-assign]
            changed = [
                Row(key=r.key, cells={**r.cells, "total": Cell(f"{i}")}) if i in (0, 3, 8, 15) else r
                for i, r in enumerate(many(20))
            ]
            table.apply(changed)
            del table.refresh
            width = table.size.width
            want = [Region(0, 1 + i - scroll, width, 1) for i in (0, 3, 8, 15) if 1 <= 1 + i - scroll < 6]
            assert sorted(marked) == sorted(want), scroll
            assert 0 < len(marked) < 4  # some rows are out of view: not marked
            table.apply(many(20))
            await pilot.pause()


async def test_new_columns_show_their_header_even_without_rows() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = await showing_tens(app, pilot)
        table.apply([], (Column("a", "Alpha"), Column("b", "Beta")))
        await pilot.pause()
        assert table.labels() == ("Alpha", "Beta") and table.row_count == 0
        assert table.virtual_size.height == 1  # the header alone: the old rows' lines are gone
        header = table.render_line(0).text
        assert "Alpha" in header and "Name" not in header
