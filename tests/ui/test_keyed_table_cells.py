"""KeyedTable draws a cell exactly as DataTable would, only cheaper (issue 10: console CPU)."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

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


Lines = list[list[Segment]]


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
