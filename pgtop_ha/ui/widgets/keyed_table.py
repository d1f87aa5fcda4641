"""A DataTable updated in place by row key: only changed cells are touched, nothing when none."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.coordinate import Coordinate
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist, RowKey

from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import fit_name, shown
from pgtop_ha.ui.panes.base import Cell, Column, Row, SortValue, ordered


class CellText(Text):
    """Rich text of one cell that remembers how it sorts and where its row came in rows()."""

    sort_key: tuple[int, SortValue] = (1, "")
    order: int = 0


LevelStyles = Mapping[Level, Style]
SegmentLines = list[list[Segment]]


@dataclass(frozen=True, slots=True)
class PaintedCell:
    """One cell of a painted row: the value drawn and its segments."""

    value: object
    line: list[Segment]


@dataclass(frozen=True, slots=True)
class KeptBox:
    """A table's box kept at its height after its rows shrank: their room, since when, its pane's size."""

    room: int
    since: float
    around: Size
    capped: bool  # the rows overflowed it when kept: it was already as tall as its pane lets it be


@dataclass(frozen=True, slots=True)
class PaintedRow:
    """A body row as last put together: what it depended on, its cells and DataTable's row pair."""

    key: tuple[object, ...]
    cells: tuple[PaintedCell, ...]
    lines: tuple[SegmentLines, SegmentLines]


# A column narrows only after its values have stayed narrower this long: under load sizes and
# rates change width every second, and a column that followed them would move the table's
# columns (and repaint all of it) each second.
SHRINK_AFTER_S = 30.0
FLAPS = 3  # rows fewer then more again, this often within SHRINK_AFTER_S: they flap (the box is kept)


def cell_line(text: CellText, inner: int, padding: int, pre: Style, post: Style) -> list[Segment] | None:
    """One table cell's line as DataTable draws it, or None when only DataTable's own path can."""
    # DataTable renders every new cell value through rich (Styled, Padding, two render_lines):
    # half of a dashboard refresh under load. A CellText is one line of plain text
    # with one style, left or right justified: a padded string, built here the way rich would.
    # tests/ui/test_keyed_table_cells.py holds it to DataTable's own output, cell by cell.
    plain = text.plain
    justify = text.justify
    if justify not in ("left", "right") or text.end or text.spans or "\n" in plain or "\t" in plain:
        return None
    if justify == "right":
        plain = plain.rstrip()
    width = cell_len(plain)
    if width > inner:
        return None  # cropped: rich's overflow rules decide
    fill = " " * (inner - width)
    body = plain + fill if justify == "left" else fill + plain
    style = text.style
    if isinstance(style, str):
        if style:
            return None  # a style by name: parsed by the console
        inside = pre + post
    else:
        inside = pre + style + post
    edge = pre + post
    # An empty text has no line for rich to justify: an empty segment, then the padding.
    middle = [Segment("", edge), Segment(fill, edge)] if not text.plain else [Segment(body, inside)]
    side = " " * padding
    if not padding:
        return middle
    return [Segment(side, edge), *middle, Segment(side, edge)]


# More rows leaving at once than this: the table is emptied and refilled rather than cut row by row.
BULK_REMOVE = 32
# A text column the view's edge cuts keeps its first cells, ending in "…", when this many fit.
MIN_TEXT_ROOM = 8


class KeyedTable(DataTable[CellText]):
    """A table whose rows are replaced by key; cursor row and sort order survive refreshes."""

    DEFAULT_CSS = """
    KeyedTable { height: auto; max-height: 100%; }
    """

    def __init__(self, columns: Sequence[Column], *, id: str | None = None, cursor: bool = True) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=cursor)
        self._cols: tuple[Column, ...] = tuple(columns)
        # Per row key: the Row object last shown (panes may reuse them; None forces a compare)
        # and what its cells said (text and level, in column order).
        self._shown: dict[str, tuple[Row | None, tuple[tuple[str, Level | None], ...]]] = {}
        self._order: list[str] = []
        self._sort: tuple[str, bool] | None = None
        self._styles: LevelStyles = {}
        self._names: tuple[str, ...] = ()  # the members' names that names columns tell apart
        self.touched = 0  # cells written since mount: tests and benchmarks read it
        self.clock: Callable[[], float] = time.monotonic  # when a column may narrow (tests set it)
        self._narrow_since: dict[str, float] = {}  # column -> since when it is wider than needed
        self._kept: KeptBox | None = None  # a box kept at its height though its rows shrank
        self._shrunk_at = float("-inf")  # when the rows last became fewer
        self._comebacks: list[float] = []  # when they became more again within SHRINK_AFTER_S
        self._flapping_until = float("-inf")  # rows keep coming back: keep the box till then
        self._painted: dict[RowKey, PaintedRow] = {}  # body rows as last put together
        self._metas: dict[tuple[int, int], Style] = {}  # (row, column) -> the meta a click reads
        self._paint_style: Style | None = None  # the widget's style while render_lines runs
        self._follows_row = False  # the DBA moved the cursor off the first row: it keeps its row

    def on_mount(self) -> None:
        """Create the columns."""
        self._add_columns()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        # A body cell holding a CellText is drawn by cell_line(); the header, labels, fixed
        # cells, taller rows and anything cell_line declines go through DataTable's own path.
        lines = self._drawn_cell(row_index, column_index, base_style, width, cursor, hover)
        if lines is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        return lines

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render the lines in ``crop``, working out the widget's style once, not once per line."""
        # DataTable.render_line asks for self.rich_style (a walk up the DOM) on every line.
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        """One line of the table, as DataTable.render_line draws it without fixed rows."""
        style = self._paint_style
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if style is None or self.fixed_rows:
            return self._drop_cut_columns(super().render_line(y), scroll_x, width, y)
        row_y = y + scroll_y if y >= (self.header_height if self.show_header else 0) else y
        line = self._render_line(row_y, scroll_x, scroll_x + width, style)
        return self._drop_cut_columns(line, scroll_x, width, y)

    def _line_row(self, y: int) -> int | None:
        """The row index line ``y`` of the view shows; -1 for the header, None past the rows."""
        header = self.header_height if self.show_header else 0
        if y < header:
            return -1
        index = y - header + self.scroll_offset.y
        return index if index < self.row_count else None

    def _drop_cut_columns(self, strip: Strip, scroll_x: int, width: int, y: int | None = None) -> Strip:
        """A column the view's edges cut: dropped whole ("5m" must never stand for "5 ms"), or,
        for a text column with room left, cut with "…"."""
        if scroll_x == 0 and self.virtual_size.width <= width:
            return strip  # the usual case: every column in view
        end = scroll_x + width
        left, right, ellipsis = 0, width, False  # the part of the strip that shows whole columns
        start = self._row_label_column_width if self.show_row_labels else 0
        text = {c.key for c in self._cols if not c.right}
        for index, column in enumerate(self.ordered_columns):
            stop = start + column.get_render_width(self)
            if start < scroll_x < stop:
                left = stop - scroll_x
            if start < end < stop:
                room = end - start - 2 * self.cell_padding
                ellipsis = str(column.key.value) in text and room >= MIN_TEXT_ROOM
                right = max(left, width - self.cell_padding if ellipsis else start - scroll_x)
                # Only a value that runs on past the edge ends in "…".
                ellipsis = ellipsis and self._cell_width(y, index) > room
            start = stop
        if (left, right) == (0, width):
            return strip
        style = self._blank_style(strip)
        parts = [Strip.blank(left, style)] if left else []
        kept = strip.crop(left, right)
        if ellipsis:
            kept = Strip.join([kept.crop(0, right - left - 1), Strip([Segment("…", style)])])
        parts.append(kept)
        if right < width:
            parts.append(Strip.blank(width - right, style))
        return Strip.join(parts)

    def _cell_width(self, y: int | None, column: int) -> int:
        """Cells the value on view line ``y`` takes in ``column``; 0 when there is none."""
        row = None if y is None else self._line_row(y)
        if row is None:
            return 0
        if row < 0:
            return self.ordered_columns[column].label.cell_len
        value = self.get_row_at(row)[column]
        return cell_len(value.plain) if isinstance(value, Text) else cell_len(str(value))

    @staticmethod
    def _blank_style(strip: Strip) -> Style | None:
        """The style of the strip's last segment: a dropped column keeps the row's background."""
        segments = list(strip)
        return segments[-1].style if segments else None

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[SegmentLines, SegmentLines]:
        # DataTable puts a row together again after any change to the table (its row cache is
        # keyed by the whole cursor coordinate and a table-wide counter), working out the same
        # styles for every cell: under load, most of a dashboard frame. A one-line
        # body row (apply() adds no other) is kept here by the very cell values it shows and
        # put together from cell_line()'s segments; a changed cell is drawn alone. Anything else
        # (the header, labels, fixed rows, another cursor type) takes DataTable's own path.
        # tests/ui/test_keyed_table_cells.py holds every line to DataTable's own output.
        if (
            line_no
            or row_key is self._header_row_key
            or self.fixed_columns
            or self.fixed_rows
            or self.zebra_stripes
            or self.cursor_type != "row"
            or (self._labelled_row_exists and self.show_row_labels)
            or (row_index := self._row_locations.get(row_key)) is None
            or (data := self._data.get(row_key)) is None
        ):
            return super()._render_line_in_row(row_key, line_no, base_style, cursor_location, hover_location)
        columns = self.ordered_columns
        values = tuple(data.get(column.key) for column in columns)
        # Widths are part of what a kept row depends on: DataTable widens a column for a new
        # row on idle without bumping its update counter.
        widths = tuple(column.get_render_width(self) for column in columns)
        cursor = row_index == cursor_location.row
        hover = row_index == hover_location.row
        key = (
            row_index,
            base_style,
            cursor,
            hover,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            self._update_count,
            self._pseudo_class_state,
            table_size := self.size.width,
            self._row_label_column_width,
            widths,
        )
        last = self._painted.get(row_key)
        earlier: tuple[PaintedCell, ...] = ()
        if last is not None and last.key == key:
            if len(last.cells) == len(values) and all(
                cell.value is value for cell, value in zip(last.cells, values, strict=True)
            ):
                return last.lines
            earlier = last.cells
        cells: list[PaintedCell] = []
        table_width = self._row_label_column_width
        for column_index, (value, width) in enumerate(zip(values, widths, strict=True)):
            table_width += width
            if column_index < len(earlier) and earlier[column_index].value is value:
                cells.append(earlier[column_index])  # same value, same width (in the key), same place
                continue
            line = self._fast_cell(value, row_index, column_index, base_style, width, cursor, hover)
            if line is None:
                line = self._render_cell(row_index, column_index, base_style, width, cursor, hover)[0]
            cells.append(PaintedCell(value, line))
        extend, _ = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor, False, False
        )
        extend_style = (
            base_style + extend + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        )
        remaining = max(0, table_size - table_width)
        lines: tuple[SegmentLines, SegmentLines] = (
            [],
            [cell.line for cell in cells] + [[Segment(" " * remaining, extend_style)]],
        )
        self._painted[row_key] = PaintedRow(key, tuple(cells), lines)
        return lines

    def _fast_cell(
        self, value: object, row: int, column: int, base_style: Style, width: int, cursor: bool, hover: bool
    ) -> list[Segment] | None:
        # A body cell holding a CellText, drawn by cell_line() with the styles DataTable gives
        # it under the cursor, the mouse or neither; None when only DataTable's own path can.
        inner = width - 2 * self.cell_padding
        if not isinstance(value, CellText) or inner < 1:
            return None
        component, post = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre = base_style + self._meta(row, column) + component
        return cell_line(value, inner, self.cell_padding, pre, post)

    def _meta(self, row: int, column: int) -> Style:
        # What a click on the cell reads (DataTable's row and column); one Style per place.
        meta = self._metas.get((row, column))
        if meta is None:
            meta = self._metas[(row, column)] = Style.from_meta({"row": row, "column": column})
        return meta

    def _drawn_cell(
        self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool, hover: bool
    ) -> list[list[Segment]] | None:
        # Same cache and key as DataTable, so _forget_renders and update counts work alike.
        if row_index < 0 or column_index < 0 or self.fixed_rows or self.fixed_columns:
            return None
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return None
        cache_key = (
            row_key,
            column_key,
            base_style,
            cursor,
            hover,
            self._show_hover_cursor,
            self._update_count,
            self._pseudo_class_state,
        )
        cached = self._cell_render_cache.get(cache_key)
        if cached is not None:
            return cached
        # One line per row, as apply() adds them (the row painter relies on it too).
        value = self._data.get(row_key, {}).get(column_key)
        line = self._fast_cell(value, row_index, column_index, base_style, width, cursor, hover)
        if line is None:
            return None
        lines = [line]
        self._cell_render_cache[cache_key] = lines
        return lines

    def clear(self, columns: bool = False) -> KeyedTable:
        """Remove every row (and the columns, when asked), with the rows painted here."""
        self._painted.clear()
        self._metas.clear()
        super().clear(columns=columns)
        return self

    def _add_columns(self) -> None:
        for col in self._cols:
            # Labels can be member names (the slot matrix): untrusted text, never markup.
            self.add_column(Text(shown(col.label), justify="right" if col.right else "left"), key=col.key)

    @property
    def columns_spec(self) -> tuple[Column, ...]:
        """The columns as the pane defined them."""
        return self._cols

    @property
    def sort_state(self) -> tuple[str, bool] | None:
        """(column key, reverse) when sorted by the user, else None (rows() order)."""
        return self._sort

    def use_level_styles(self, styles: LevelStyles) -> None:
        """Use these styles for OK/WARN/CRIT and redraw every cell with them."""
        self._styles = styles
        self._rewrite_all()

    def use_names(self, names: tuple[str, ...]) -> None:
        """Tell apart these members' names in names columns; new names redraw every cell."""
        if names != self._names:
            self._names = names
            if any(col.names for col in self._cols):
                self._rewrite_all()

    def _rewrite_all(self) -> None:
        # The next apply() compares and writes every cell, even of rows shown as they are.
        self._shown = {key: (None, ()) for key in self._shown}

    def _make(self, c: Cell, col: Column, order: int) -> CellText:
        # The one place a cell becomes text: server strings are cleaned here, and a Text is
        # never parsed as markup.
        style = self._styles.get(c.level) if c.level is not None else None
        if col.names and col.width:
            text = fit_name(c.text, self._names, col.width)
        else:
            text = shown(c.text, col.width) if col.width else shown(c.text)
        t = CellText(text, style=style or "", justify="right" if col.right else "left", end="")
        t.no_wrap = True
        t.sort_key = c.sort_key()
        t.order = order
        return t

    def apply(self, rows: Sequence[Row], columns: Sequence[Column] | None = None) -> int:
        """Make the table show ``rows``; returns how many cells were written (0: no repaint)."""
        if columns is not None and tuple(columns) != self._cols:
            self._cols = tuple(columns)
            self.clear(columns=True)
            self._shown.clear()
            self._narrow_since.clear()
            self._order = []
            self._add_columns()
        if self._narrow_since:
            self._shrink()
        if self._kept is not None and (
            self.clock() - self._kept.since >= SHRINK_AFTER_S or self._kept.around != self._around()
        ):
            self._let_box_go()  # its time is up, or its pane changed size (a resized terminal)
        if self._unchanged(rows):
            return 0
        cursor_key = self._cursor_key()
        wanted = {r.key for r in rows}
        written = 0
        moved = False
        rewritten: dict[str, set[str]] = {}  # row -> columns written in place
        narrowed: set[str] = set()  # columns whose widest value went away: they may shrink
        laying_out = self._layout_required
        now = self.clock()
        self._note_comings_and_goings(len(self._shown), len(rows), now)
        gone = [k for k in self._shown if k not in wanted]
        if len(gone) > BULK_REMOVE:
            # DataTable.remove_row renumbers every row: many removals one by one cost rows
            # squared. Emptied and refilled, the table costs its rows once.
            narrowed |= {c.key for c in self._cols}
            self.clear()
            self._shown.clear()
            self._painted.clear()
            moved = True
            gone = []
        for key in gone:
            narrowed |= self._widest_in(key)
            with contextlib.suppress(RowDoesNotExist):
                self.remove_row(key)
            del self._shown[key]
            self._painted.pop(RowKey(key), None)
            moved = True
        for index, row in enumerate(rows):
            last_row, old = self._shown.get(row.key, (None, None))
            if last_row is row:
                continue  # the very Row shown last time (rows are frozen): nothing to compare
            cells = ordered(row, self._cols)  # a missing or extra column fails here, loudly
            sig = tuple((c.text, c.level) for c in cells)
            if old is None:
                values = [self._make(c, col, index) for c, col in zip(cells, self._cols, strict=True)]
                self.add_row(*values, key=row.key)
                written += len(values)
                moved = True
            elif old != sig:
                for j, (c, col) in enumerate(zip(cells, self._cols, strict=True)):
                    if j < len(old) and old[j] == sig[j]:
                        continue
                    # Measuring widths costs a layout pass: only when the column must widen.
                    value = self._make(c, col, index)
                    widest = self._content_width(col.key)
                    grows = len(value.plain) > widest
                    if not grows and self._was_widest(row.key, col.key, widest, value):
                        narrowed.add(col.key)
                    try:
                        self._write_cell(row.key, col.key, value, grows)
                    except CellDoesNotExist:
                        continue
                    if not grows:
                        rewritten.setdefault(row.key, set()).add(col.key)
                    written += 1
                    if self._sort is not None and self._sort[0] == col.key:
                        moved = True
            self._shown[row.key] = (row, sig)
        if not laying_out:
            # DataTable.remove_row lays the whole screen out at once; the new size is known on
            # idle, where _update_dimensions decides whether the table's box changed at all.
            self._layout_required = False
        if narrowed:
            for key in narrowed:
                self._narrow_since.setdefault(key, now)
        if rewritten:
            self._forget_renders(rewritten)
        order = [r.key for r in rows]
        if order != self._order:
            self._order = order
            self._set_order(order)
            moved = True
        if moved:
            self._resort()
            self._restore_cursor(cursor_key)
        self.touched += written
        return written

    def _note_comings_and_goings(self, before: int, after: int, now: float) -> None:
        # Rows that keep coming back within SHRINK_AFTER_S of going (FLAPS times: a problem at
        # its threshold, processes starting and ending under load) flap: from then on the box
        # keeps its height when rows go. Rows that go for good, or come back once or twice while
        # a failover settles, shrink it at once: kept, they left blank lines for 30 s where the
        # newest events are read at 80x24.
        if after < before:
            self._shrunk_at = now
        elif after > before and now - self._shrunk_at < SHRINK_AFTER_S:
            self._shrunk_at = float("-inf")  # one comeback per going
            self._comebacks = [t for t in self._comebacks if now - t < SHRINK_AFTER_S] + [now]
            if len(self._comebacks) >= FLAPS:
                self._flapping_until = now + SHRINK_AFTER_S

    def _unchanged(self, rows: Sequence[Row]) -> bool:
        # The very Rows shown last time, in the same order (cached row builders, panes/base.py):
        # nothing to compare, move or repaint, and no need to look up the cursor.
        shown = self._shown
        if len(rows) != len(shown) or len(rows) != len(self._order):
            return False
        for row, key in zip(rows, self._order, strict=True):
            last = shown.get(key)
            if row.key != key or last is None or last[0] is not row:
                return False
        return True

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        # A new virtual size makes Textual lay out the whole screen (25-50 ms at 160x48). Under
        # load a problem that comes and goes or a column that widens did that every few seconds
        # . When the table's box stays the same (its width follows its pane; its
        # height is capped by the pane before and after, or kept: _keep_box) and no scrollbar
        # comes or goes, the scrollbars are updated and the table repainted instead.
        laying_out = self._layout_required
        before = self.virtual_size.height
        super()._update_dimensions(new_rows)
        if laying_out or not self._layout_required:
            return
        self._layout_required = False
        after = self.virtual_size.height
        if self._kept is not None:
            if after > self._kept.room and not self._kept.capped:
                self._let_box_go()  # more rows than the kept box holds: it grows at once
                return
            self._kept = replace(self._kept, since=self.clock())  # the wait starts over
        elif (
            after < before
            and self._auto_height()
            and not self._box_holds(before, after)
            and self.clock() < self._flapping_until
        ):
            self._keep_box()
        bars = (self.show_vertical_scrollbar, self.show_horizontal_scrollbar)
        self._scroll_update(self.virtual_size)  # scrollbars' visibility, sizes, the scroll offset
        if self._layout_required or bars != (self.show_vertical_scrollbar, self.show_horizontal_scrollbar):
            self._layout_required = True  # a scrollbar came or went: the box's inside moved
            return
        if not self._box_holds(before, self.virtual_size.height):
            self.refresh(layout=True)
            return
        self.refresh()

    def _auto_height(self) -> bool:
        return self.styles.height is None or self.styles.height.is_auto

    def _keep_box(self) -> None:
        # Rows that went away would shrink the table's box (and hide its scrollbar): the rows
        # below move up and the screen is laid out again. Under load a problem at its threshold
        # comes and goes every few seconds; only then (_note_comings_and_goings) is the box kept.
        # The box keeps its height (and its scrollbar) until the rows have been fewer for
        # SHRINK_AFTER_S, as a column keeps its width. More rows than it holds grow it at once,
        # unless it was already as tall as its pane allows (capped): they scroll in it, as before.
        if not self.size.height:
            return
        capped = self.show_vertical_scrollbar
        self._kept = KeptBox(self.scrollable_content_region.height, self.clock(), self._around(), capped)
        self.styles.height = self.outer_size.height
        if capped:
            self.styles.overflow_y = "scroll"
        self._layout_required = False  # the same height and scrollbar as laid out last

    def _around(self) -> Size:
        # The size of what holds the table: a kept box is let go when it changes.
        parent = self.parent
        return parent.size if isinstance(parent, Widget) else Size(0, 0)

    def _let_box_go(self) -> None:
        # Back to the stylesheet's height and overflow: one layout, to the rows' height.
        self._kept = None
        self.styles.clear_rule("height")
        self.styles.clear_rule("overflow_y")
        self.refresh(layout=True)

    def _box_holds(self, before: int, after: int) -> bool:
        # An auto height follows the rows up to max-height: the box keeps its height when the
        # rows' height is the same (a column widened), or while the rows overflow it both before
        # and after (the scrollbar then already shows).
        if after == before or not self._auto_height():
            return True
        inside = self.scrollable_content_region.height
        return inside > 0 and before > inside and after >= inside

    def _write_cell(self, row: str, column: str, value: CellText, grows: bool) -> None:
        # DataTable.update_cell repaints the whole table for one cell; when the column keeps
        # its width, the value is stored here and _forget_renders repaints only the cell's row.
        if grows:
            self.update_cell(row, column, value, update_width=True)
            return
        row_key, column_key = RowKey(row), ColumnKey(column)
        if row_key not in self._row_locations or column_key not in self._column_locations:
            raise CellDoesNotExist(f"no cell {row!r}/{column!r}")
        self._data[row_key][column_key] = value

    def _forget_renders(self, rewritten: Mapping[str, set[str]]) -> None:
        # DataTable keys every render cache by _update_count: bumping it (as update_cell does)
        # makes the next paint of a row render all of its cells again through rich, the
        # costliest part of a frame. Forget only the rewritten cells and their rows' lines, so
        # a row with one new value renders one cell and reuses the others.
        # Matched by the keys' strings: a RowKey hashes and compares in Python, once per cached
        # entry, and every table with a new value went through all of its caches.
        cells = {(r, c) for r, cols in rewritten.items() for c in cols}
        cell_keys = self._cell_render_cache.keys()  # an LRUCache is not iterable itself
        for cell_key in [k for k in cell_keys if k[0] and k[1] and (k[0].value, k[1].value) in cells]:
            self._cell_render_cache.discard(cell_key)
        row_keys = self._row_render_cache.keys()
        for row_cache_key in [k for k in row_keys if k[0] and k[0].value in rewritten]:
            self._row_render_cache.discard(row_cache_key)
        self._line_cache.clear()  # keyed by screen line: cheap to rebuild from the row caches
        indexes = []
        for row in rewritten:
            index = self._row_locations.get(RowKey(row))
            if index is not None:
                self._row_renderable_cache.discard((self._update_count, index))
                indexes.append(index)
        self._refresh_rows(indexes)

    def _refresh_rows(self, indexes: Sequence[int]) -> None:
        # DataTable.refresh_row measures the table's width and sums the heights of the rows
        # above, for each row. apply() adds rows of one line only, so row i is line i below the
        # header: one refresh for all.
        if self.fixed_rows:
            for index in indexes:
                self.refresh_row(index)
            return
        window = self.window_region
        width = max(
            self.size.width,
            sum(column.get_render_width(self) for column in self.columns.values())
            + self._row_label_column_width,
        )
        top = self.header_height if self.show_header else 0
        offset = -self.scroll_offset
        regions = [
            region.translate(offset)
            for index in indexes
            if 0 <= index < self.row_count and window.overlaps(region := Region(0, top + index, width, 1))
        ]
        if regions:
            self.refresh(*regions)

    def _holds_width(self, row: str, column: str, width: int) -> bool:
        # The cell's value is as wide as ``width`` (its column's): changing or removing it may
        # let the column narrow. Other cells cannot, so nothing is measured for them.
        value = self._data.get(RowKey(row), {}).get(ColumnKey(column))
        return isinstance(value, Text) and cell_len(value.plain) >= width

    def _widest_in(self, row: str) -> set[str]:
        # The columns where this row holds the width: removing it may let them narrow.
        return {c.key for c in self._cols if self._holds_width(row, c.key, self._content_width(c.key))}

    def _was_widest(self, row: str, column: str, widest: int, value: CellText) -> bool:
        # The cell about to be written held the column's width and the new value is narrower.
        return cell_len(value.plain) < widest and self._holds_width(row, column, widest)

    def _shrink(self) -> None:
        # DataTable widens a column for a wider value but never narrows it again, and the
        # in-place writes above bypass update_cell: after an incident the overview kept the
        # width of "REST slow 2s" for good. Measured only for columns whose widest
        # value changed or went away, until they narrow or a value as wide comes back.
        now = self.clock()
        changed = False
        for key, since in list(self._narrow_since.items()):
            column = self.columns.get(ColumnKey(key))
            if column is None or not column.auto_width:
                del self._narrow_since[key]
                continue
            # The first value as wide as the column ends the search: in the Events pane every
            # time, level and kind is, and a removed event flagged them with all 500 kept.
            wanted, full = column.label.cell_len, column.content_width
            for value in self.get_column(key):
                wanted = max(wanted, cell_len(value.plain) if isinstance(value, Text) else full)
                if wanted >= full:
                    break
            if wanted >= full:
                del self._narrow_since[key]  # as wide a value is back: nothing to narrow
            elif now - since >= SHRINK_AFTER_S:
                del self._narrow_since[key]
                column.content_width = wanted
                changed = True
        if changed:
            # Every cell's place moves: the whole table is drawn again, as update_cell does.
            self._update_count += 1
            self._require_update_dimensions = True
            self.refresh()

    def _content_width(self, key: str) -> int:
        column = self.columns.get(ColumnKey(key))
        return 0 if column is None else column.content_width

    def _set_order(self, order: list[str]) -> None:
        # Rows keep the index rows() gave them so "no sort" means rows() order. Straight from
        # the table's data: get_row() puts each row's cells in column order first, 4.1 ms
        # against 0.65 for the 500 events kept, on every new event (each moves all the others).
        data = self._data
        for index, key in enumerate(order):
            for value in data.get(RowKey(key), {}).values():
                value.order = index

    def sort_by(self, column: str | None, reverse: bool = False) -> None:
        """Sort by ``column`` (None: rows() order) and keep it that way across refreshes."""
        cursor_key = self._cursor_key()
        self._sort = None if column is None else (column, reverse)
        self._resort()
        self._restore_cursor(cursor_key)

    def cycle_sort(self) -> str:
        """Sort by the next column (after the last one: rows() order); returns a description."""
        keys = [c.key for c in self._cols]
        if self._sort is None:
            nxt: str | None = keys[0] if keys else None
        else:
            i = keys.index(self._sort[0]) if self._sort[0] in keys else -1
            nxt = keys[i + 1] if i + 1 < len(keys) else None
        self.sort_by(nxt, reverse=False)
        return self.describe_sort()

    def reverse_sort(self) -> str:
        """Flip the direction of the current sort; returns a description."""
        if self._sort is not None:
            self.sort_by(self._sort[0], not self._sort[1])
        return self.describe_sort()

    def describe_sort(self) -> str:
        """'sorted by Lag ↓' or 'natural order'."""
        if self._sort is None:
            return "natural order"
        label = next((c.label for c in self._cols if c.key == self._sort[0]), self._sort[0])
        return f"sorted by {label} {'↓' if self._sort[1] else '↑'}"

    def _resort(self) -> None:
        if not self.row_count:
            return
        if self._sort is None:
            self.sort(key=lambda values: values[0].order if values else 0)
            return
        column, reverse = self._sort
        if column not in {c.key for c in self._cols}:
            return
        self.sort(column, key=lambda value: (value.sort_key, value.order), reverse=reverse)

    def watch_cursor_coordinate(self, old_coordinate: Coordinate, new_coordinate: Coordinate) -> None:
        """Note where the DBA put the cursor (a row to stay with, or the top); then DataTable's own."""
        self._follows_row = new_coordinate.row != 0
        super().watch_cursor_coordinate(old_coordinate, new_coordinate)

    def row_under_cursor(self) -> str | None:
        """The key of the row the cursor is on (None in an empty table)."""
        if not self.row_count:
            return None
        try:
            return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except CellDoesNotExist:
            return None

    def _cursor_key(self) -> str | None:
        # The row the cursor stays with when rows come, go or move: the one the DBA moved it to.
        # Untouched, or moved back to the first row, it stays on the first row, whichever that
        # is (as `tail -f` follows the end). DataTable scrolls to its cursor, hidden or not: kept
        # with the first event ever shown, it scrolled the Events pane and the overview's
        # events (newest first) down as a failure test brought new ones, the newest out of view.
        return self.row_under_cursor() if self._follows_row else None

    def _restore_cursor(self, key: str | None) -> None:
        if key is None:
            return
        try:
            row = self.get_row_index(key)
        except RowDoesNotExist:
            return
        if row != self.cursor_row:
            self.move_cursor(row=row, animate=False, scroll=False)
            self._follows_row = True  # not the DBA's move: it still follows the row, even at the top

    def visible_texts(self) -> list[list[str]]:
        """The table's text in display order (for tests)."""
        out = []
        for i in range(self.row_count):
            out.append([v.plain for v in self.get_row_at(i)])
        return out
