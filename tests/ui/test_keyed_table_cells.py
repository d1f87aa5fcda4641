"""KeyedTable draws a cell exactly as DataTable would, only cheaper (issue 10: console CPU)."""

from __future__ import annotations

import itertools

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from pgtop_ha.ui.panes.base import Cell, Column, Row
from pgtop_ha.ui.widgets.keyed_table import KeyedTable, cell_line

COLUMNS = (
    Column("name", "Name"),
    Column("total", "Total", right=True),
    Column("state", "State"),
    Column("fixed", "Fixed", width=6),
)
TEXTS = ["", "   ", "0 B", "880 B  ", "  lead", "日本語", "✔ node1", "x" * 30, "streaming", "-", "a\u200bb"]
LEVELS = [None, "ok", "warn", "crit"]
STYLES = {
    "ok": Style(color="green"),
    "warn": Style(color="yellow", bold=True),
    "crit": Style(color="white", bgcolor="red", underline=True),
}


def rows() -> list[Row]:
    out = []
    for i, text in enumerate(TEXTS):
        level = LEVELS[i % len(LEVELS)]
        cells = {
            "name": Cell(f"row {i}"),
            "total": Cell(text, level=level),  # type: ignore[arg-type]
            "state": Cell(text[::-1], level=LEVELS[(i + 1) % len(LEVELS)]),  # type: ignore[arg-type]
            "fixed": Cell(text),
        }
        out.append(Row(key=f"r{i}", cells=cells))
    return out


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="t")


Line = list[Segment]
Lines = list[Line]


def datatable_lines(table: KeyedTable, row: int, column: int, style: Style, width: int, **how: bool) -> Lines:
    table._cell_render_cache.clear()
    return DataTable._render_cell(table, row, column, style, width, **how)


def keyed_lines(table: KeyedTable, row: int, column: int, style: Style, width: int, **how: bool) -> Lines:
    table._cell_render_cache.clear()
    return table._render_cell(row, column, style, width, **how)


async def test_every_cell_is_drawn_as_datatable_draws_it() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.use_level_styles(STYLES)  # type: ignore[arg-type]
        table.apply(rows())
        table.move_cursor(row=2)
        await pilot.pause()
        base = Style(color="white", bgcolor="blue")
        compared = 0
        for row in range(table.row_count):
            for column in range(len(COLUMNS)):
                for width in (1, 2, 3, 8, 12, 40):
                    for how in ({}, {"cursor": True}, {"hover": True}):
                        want = datatable_lines(table, row, column, base, width, **how)
                        got = keyed_lines(table, row, column, base, width, **how)
                        assert got == want, (row, column, width, how)
                        compared += 1
        assert compared == table.row_count * len(COLUMNS) * 6 * 3
        # The header row goes through DataTable's own path, and says the same.
        header = keyed_lines(table, -1, 0, base, 10)
        assert header == datatable_lines(table, -1, 0, base, 10)
        assert table.get_cell_at(Coordinate(2, 0)).plain == "row 2"


def test_cell_line_declines_what_only_rich_can_draw() -> None:
    from pgtop_ha.ui.widgets.keyed_table import CellText

    pre, post = Style(bold=True), Style()
    assert cell_line(CellText("too wide", justify="left", end=""), 3, 1, pre, post) is None
    assert cell_line(CellText("two\nlines", justify="left", end=""), 20, 1, pre, post) is None
    assert cell_line(CellText("mid", justify="center", end=""), 20, 1, pre, post) is None
    spanned = CellText("ab", justify="left", end="")
    spanned.stylize("red", 0, 1)
    assert cell_line(spanned, 20, 1, pre, post) is None
    drawn = cell_line(CellText("ab", justify="right", end=""), 4, 1, pre, post)
    assert drawn is not None and "".join(s.text for s in drawn) == "   ab "


def datatable_row(table: KeyedTable, key: str, style: Style, cursor: Coordinate, hover: Coordinate) -> Line:
    table._row_render_cache.clear()
    table._cell_render_cache.clear()
    fixed, scrollable = DataTable._render_line_in_row(table, RowKey(key), 0, style, cursor, hover)
    assert fixed == []
    return [segment for cell in scrollable for segment in cell]


def keyed_row(table: KeyedTable, key: str, style: Style, cursor: Coordinate, hover: Coordinate) -> Line:
    fixed, scrollable = table._render_line_in_row(RowKey(key), 0, style, cursor, hover)
    assert fixed == []
    return [segment for cell in scrollable for segment in cell]


def segments_and_meta(line: Line) -> list[tuple[str, Style, dict[str, object]]]:
    # Segment equality compares styles without their meta; a click reads the meta, so compare it too.
    return [(s.text, s.style, s.style.meta if s.style is not None else {}) for s in line]  # type: ignore[misc]


async def test_every_row_is_put_together_as_datatable_puts_it() -> None:
    # KeyedTable keeps body rows by the cell values they show (issue 10: a frame under load);
    # each must say what DataTable's own row assembly says, whatever moved since it was kept.
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(KeyedTable)
        table.use_level_styles(STYLES)  # type: ignore[arg-type]
        table.apply(rows())
        await pilot.pause()
        base = Style(color="white", bgcolor="blue")
        compared = 0

        def check_all() -> None:
            nonlocal compared
            for key, show_hover in itertools.product([r.key for r in rows()], (False, True)):
                table._show_hover_cursor = show_hover  # the mouse moved over the table, or not
                for cursor_row in (0, 2, 5):
                    for hover_row in (-1, 2, 7):
                        cursor, hover = Coordinate(cursor_row, 0), Coordinate(hover_row, 1)
                        # Twice: the second is the kept row, the first may be put together anew.
                        for _ in range(2):
                            got = keyed_row(table, key, base, cursor, hover)
                            want = datatable_row(table, key, base, cursor, hover)
                            assert segments_and_meta(got) == segments_and_meta(want), (
                                key,
                                cursor,
                                hover,
                                show_hover,
                            )
                            compared += 1

        check_all()
        changed = rows()
        changed[3] = Row(key="r3", cells={**changed[3].cells, "state": Cell("new", level="crit")})  # type: ignore[arg-type]
        table.apply(changed)  # one cell written in place
        table.apply(
            [*changed, Row(key="wide", cells={c.key: Cell("w" * 18) for c in COLUMNS})]
        )  # columns widen
        await pilot.pause()
        table.sort_by("total", reverse=True)  # every row at another index: another click meta
        check_all()
        assert compared == 2 * 2 * 2 * len(TEXTS) * 9
        assert "new" in "".join(
            s.text for s in keyed_row(table, "r3", base, Coordinate(0, 0), Coordinate(-1, 0))
        )


async def test_every_line_is_the_line_datatable_draws_scrolled_or_not() -> None:
    # KeyedTable.render_line works the widget's style out once per paint; the lines are DataTable's.
    app = TableApp()
    async with app.run_test(size=(60, 6)) as pilot:
        table = app.query_one(KeyedTable)
        table.apply(rows())
        table.move_cursor(row=4)
        await pilot.pause()
        compared = 0
        for scroll in (0, 3):
            table.scroll_to(y=scroll, animate=False, immediate=True)
            await pilot.pause()
            assert table.scroll_offset.y == scroll
            for y in range(table.size.height):
                table._line_cache.clear()
                # DataTable's line, less the column its right edge cuts (dropped whole instead).
                want = table._drop_cut_columns(DataTable.render_line(table, y), 0, table.size.width, y)
                table._line_cache.clear()
                table._paint_style = table.rich_style  # as inside render_lines
                got = table.render_line(y)
                table._paint_style = None
                assert list(got) == list(want), (scroll, y)
                compared += 1
        assert compared == 2 * table.size.height and table.size.height >= 4


@pytest.mark.parametrize(("edge_at", "how"), [(1, "dropped"), (2, "ellipsis")])
async def test_a_column_the_edge_cuts_is_dropped_or_ends_in_an_ellipsis(edge_at: int, how: str) -> None:
    # Name, Total (right-aligned: a figure), State (text), Fixed: the view's edge inside one.
    app = TableApp()
    async with app.run_test(size=(200, 16)) as pilot:
        table = app.query_one(KeyedTable)
        table.apply(rows())
        await pilot.pause()
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        await pilot.resize_terminal(sum(widths[:edge_at]) + widths[edge_at] - 4, 16)
        await pilot.pause()
        start = sum(widths[:edge_at])
        assert start < table.size.width < start + widths[edge_at]
        row = 1 + TEXTS.index("x" * 30)  # the header, then the rows in order
        table._line_cache.clear()
        header, line = table.render_line(0).text, table.render_line(row).text
        assert len(line) == table.size.width
        if how == "dropped":  # the figure column: gone whole, header and cells
            assert header[start:].strip() == "" and line[start:].strip() == "", line
        else:  # the text column: its first cells, then "…"
            assert line[start:].rstrip().endswith("x…"), line
