"""KeyedTable draws every line as Textual's DataTable draws the same cells, only cheaper."""

from __future__ import annotations

import pytest
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
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
    CSS = "KeyedTable, DataTable { height: 6; }"
    AUTO_FOCUS = None

    def compose(self) -> ComposeResult:
        yield KeyedTable(COLUMNS, id="t")
        yield DataTable(id="d", cursor_type="row", zebra_stripes=False)


def mirrored(table: KeyedTable, data: DataTable[Text]) -> None:
    """The DataTable given the very cells the KeyedTable shows, in its order."""
    data.clear(columns=True)
    for col, label in zip(table.columns_spec, table.labels(), strict=True):
        data.add_column(Text(label, justify="right" if col.right else "left"), key=col.key)
    for index in range(table.row_count):
        data.add_row(*table.get_row_at(index), key=str(index))


def line_of(widget: KeyedTable | DataTable[Text], y: int) -> list[tuple[str, Style | None, object]]:
    # Segment equality compares styles without their meta; a click reads the meta, so compare it too.
    return [(s.text, s.style, s.style.meta if s.style is not None else {}) for s in widget.render_line(y)]


async def same_lines(pilot: Pilot[None], table: KeyedTable, data: DataTable[Text], focus: bool) -> int:
    """Compare every line of both, cursor and scroll alike, each focused or not in turn."""
    compared = 0
    for cursor in (0, 2, 5):
        for scroll in (0, 3):
            for widget in (table, data):
                widget.move_cursor(row=cursor, scroll=False)
                widget.scroll_to(y=scroll, animate=False, immediate=True)
            seen: list[list[list[tuple[str, Style | None, object]]]] = []
            for widget in (table, data):
                pilot.app.set_focus(widget if focus else None)
                await pilot.pause()
                assert widget.scroll_offset.y == scroll
                seen.append([line_of(widget, y) for y in range(widget.size.height)])
            assert seen[0] == seen[1], (cursor, scroll, focus)
            compared += len(seen[0])
    return compared


async def test_every_line_is_the_line_datatable_draws() -> None:
    app = TableApp()
    async with app.run_test(size=(100, 16)) as pilot:
        table = app.query_one(KeyedTable)
        data: DataTable[Text] = app.query_one(DataTable)
        table.use_level_styles(STYLES)  # type: ignore[arg-type]
        table.apply(rows())
        mirrored(table, data)
        await pilot.pause()
        compared = 0
        for focus in (False, True):
            compared += await same_lines(pilot, table, data, focus)
        changed = rows()
        changed[3] = Row(key="r3", cells={**changed[3].cells, "state": Cell("new", level="crit")})  # type: ignore[arg-type]
        table.apply(changed)  # one cell written in place
        table.apply([*changed, Row(key="wide", cells={c.key: Cell("w" * 18) for c in COLUMNS})])  # wider
        table.sort_by("total", reverse=True)  # every row at another index
        mirrored(table, data)
        await pilot.pause()
        compared += await same_lines(pilot, table, data, False)
        assert compared == 3 * 6 * 2 * 3
        lines = ["".join(s.text for s in table.render_line(y)) for y in range(6)]
        assert any("new" in line for line in lines)


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


@pytest.mark.parametrize(("edge_at", "how"), [(1, "dropped"), (2, "ellipsis")])
async def test_a_column_the_edge_cuts_is_dropped_or_ends_in_an_ellipsis(edge_at: int, how: str) -> None:
    # Name, Total (right-aligned: a figure), State (text), Fixed: the view's edge inside one.
    app = TableApp()
    async with app.run_test(size=(200, 16)) as pilot:
        table = app.query_one(KeyedTable)
        table.apply(rows())
        await pilot.pause()
        widths = table.column_widths()
        await pilot.resize_terminal(sum(widths[:edge_at]) + widths[edge_at] - 4, 16)
        await pilot.pause()
        start = sum(widths[:edge_at])
        assert start < table.size.width < start + widths[edge_at]
        row = 1 + TEXTS.index("x" * 30)  # the header, then the rows in order
        header, line = table.render_line(0).text, table.render_line(row).text
        assert len(line) == table.size.width
        if how == "dropped":  # the figure column: gone whole, header and cells
            assert header[start:].strip() == "" and line[start:].strip() == "", line
        else:  # the text column: its first cells, then "…"
            assert line[start:].rstrip().endswith("x…"), line
