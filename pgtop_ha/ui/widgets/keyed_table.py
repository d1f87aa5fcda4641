"""A table of keyed rows drawn through Textual's Line API: a changed cell redraws its row only."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from pgtop_ha.models.text import fit
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import fit_name, shown
from pgtop_ha.ui.panes.base import Cell, Column, Row, SortValue, ordered


class CellText(Text):
    """Rich text of one cell that remembers how it sorts."""

    sort_key: tuple[int, SortValue] = (1, "")


LevelStyles = Mapping[Level, Style]

HEADER = 1  # the header's height: every row is one line
PADDING = 1  # blank cells either side of a value
# A column narrows only after its values have stayed narrower this long: under load sizes and
# rates change width every second, and a column that followed them would move the table's
# columns (and repaint all of it) each second.
SHRINK_AFTER_S = 30.0
FLAPS = 3  # rows fewer then more again, this often within SHRINK_AFTER_S: they flap (the box is kept)
# A text column the view's edge cuts keeps its first cells, ending in "…", when this many fit.
MIN_TEXT_ROOM = 8


def cell_line(text: CellText, inner: int, padding: int, pre: Style, post: Style) -> list[Segment] | None:
    """One cell's line: a padded, justified string in one style, or None when it does not fit."""
    # A CellText is one line of clean text (ui/format.shown) with one style, left or right
    # justified, so a cell is a padded string: no rich layout for the hundreds drawn per frame.
    plain = text.plain
    justify = text.justify
    if justify not in ("left", "right") or text.end or text.spans or "\n" in plain or "\t" in plain:
        return None
    if justify == "right":
        plain = plain.rstrip()
    width = cell_len(plain)
    if width > inner:
        return None
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
    middle = [Segment("", edge), Segment(fill, edge)] if not text.plain else [Segment(body, inside)]
    side = " " * padding
    if not padding:
        return middle
    return [Segment(side, edge), *middle, Segment(side, edge)]


def _fitted(text: CellText, inner: int) -> CellText:
    """A value wider than its cell, ended in "…" so it is never read as another value."""
    return CellText(fit(text.plain.strip(), inner), style=text.style, justify=text.justify, end="")


@dataclass(frozen=True, slots=True)
class KeptBox:
    """A box kept at its height after its rows became fewer: the height, since when, its pane's size."""

    height: int
    since: float
    around: Size


@dataclass(frozen=True, slots=True)
class PaintedRow:
    """A row as last drawn: what its look depends on, its cells, their lines, the whole line."""

    look: tuple[object, ...]
    cells: tuple[CellText, ...]
    parts: tuple[list[Segment], ...]
    strip: Strip


@dataclass(frozen=True, slots=True)
class Look:
    """The styles of one paint: the widget's, its header's, and the cursor's and hover's."""

    base: Style
    header: Style
    cursor: Style
    hover: Style


def _post(component: Style) -> Style:
    # The cursor's text colour wins over a cell's level colour; a level's background stays.
    return Style.from_color(color=component.color)


class KeyedTable(ScrollView, can_focus=True):
    """A table whose rows are replaced by key; cursor row and sort order survive refreshes."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "keyed-table--header",
        "keyed-table--cursor",
        "keyed-table--hover",
    }

    class Chosen(Message):
        """Enter on a row: its key."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Choose", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home,ctrl+home", "first", "First row", show=False),
        Binding("end,ctrl+end", "last", "Last row", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
    ]

    DEFAULT_CSS = """
    KeyedTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .keyed-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .keyed-table--header {
                background-tint: $foreground 5%;
            }
        }
        & > .keyed-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .keyed-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .keyed-table--hover {
            background: $block-hover-background;
        }
    }
    """

    def __init__(self, columns: Sequence[Column], *, id: str | None = None, cursor: bool = True) -> None:
        super().__init__(id=id)
        self.show_cursor = cursor
        self.cursor_row = 0
        self._cols: tuple[Column, ...] = ()
        self._labels: tuple[CellText, ...] = ()
        self._widths: list[int] = []  # each column's content width, padding not included
        self._cells: dict[str, tuple[CellText, ...]] = {}  # row key -> its cells, in column order
        # Per row key: the Row object last shown (panes may reuse them; None forces a compare)
        # and what its cells said (text and level, in column order).
        self._shown: dict[str, tuple[Row | None, tuple[tuple[str, Level | None], ...]]] = {}
        self._order: list[str] = []  # rows() order
        self._rank: dict[str, int] = {}  # row key -> its place in rows()
        self._keys: list[str] = []  # display order
        self._at: dict[str, int] = {}  # row key -> display index
        self._sort: tuple[str, bool] | None = None
        self._styles: LevelStyles = {}
        self._names: tuple[str, ...] = ()  # the members' names that names columns tell apart
        self.touched = 0  # cells written since mount: tests and benchmarks read it
        self.clock: Callable[[], float] = time.monotonic  # when a column may narrow (tests set it)
        self._narrow_since: dict[int, float] = {}  # column -> since when it is wider than needed
        self._kept: KeptBox | None = None  # a box kept at its height though its rows became fewer
        self._shrunk_at = float("-inf")  # when the rows last became fewer
        self._comebacks: list[float] = []  # when they became more again within SHRINK_AFTER_S
        self._flapping_until = float("-inf")  # rows keep coming back: keep the box till then
        self._painted: dict[str, PaintedRow] = {}  # rows as last drawn
        self._header: PaintedRow | None = None
        self._metas: dict[tuple[int, int], Style] = {}  # (row, column) -> the meta a click reads
        self._look: Look | None = None  # the styles while render_lines runs
        self._follows_row = False  # the DBA moved the cursor off the first row: it keeps its row
        self._hover_row: int | None = None  # the row under the mouse
        self._set_columns(columns)

    # The columns and their widths

    def _set_columns(self, columns: Sequence[Column]) -> None:
        self._cols = tuple(columns)
        # Labels can be member names (the slot matrix): untrusted text, never markup.
        labels = []
        for col in self._cols:
            label = CellText(shown(col.label), justify="right" if col.right else "left", end="")
            label.no_wrap = True
            labels.append(label)
        self._labels = tuple(labels)
        self._widths = [self._least_width(i) for i in range(len(self._cols))]
        self._narrow_since.clear()
        self._header = None

    def _least_width(self, index: int) -> int:
        # A column is as wide as its label until values widen it (a column's width bounds its text).
        return cell_len(self._labels[index].plain)

    @property
    def columns_spec(self) -> tuple[Column, ...]:
        """The columns as the pane defined them."""
        return self._cols

    def content_width(self, key: str) -> int:
        """How many cells the column ``key`` gives its values (0 for no such column)."""
        for col, width in zip(self._cols, self._widths, strict=True):
            if col.key == key:
                return width
        return 0

    def column_widths(self) -> tuple[int, ...]:
        """Each column's width on screen, padding included, in column order."""
        return tuple(width + 2 * PADDING for width in self._widths)

    def labels(self) -> tuple[str, ...]:
        """The column labels as shown."""
        return tuple(label.plain for label in self._labels)

    @property
    def header_height(self) -> int:
        """Lines the header takes above the rows."""
        return HEADER

    @property
    def row_count(self) -> int:
        """How many rows the table holds."""
        return len(self._keys)

    @property
    def sort_state(self) -> tuple[str, bool] | None:
        """(column key, reverse) when sorted by the user, else None (rows() order)."""
        return self._sort

    def get_row_at(self, index: int) -> tuple[CellText, ...]:
        """The cells of the row at display ``index``."""
        return self._cells[self._keys[index]]

    def visible_texts(self) -> list[list[str]]:
        """The table's text in display order (for tests)."""
        return [[cell.plain for cell in self._cells[key]] for key in self._keys]

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

    def _make(self, c: Cell, col: Column) -> CellText:
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
        return t

    # Rows

    def apply(self, rows: Sequence[Row], columns: Sequence[Column] | None = None) -> int:
        """Make the table show ``rows``; returns how many cells were written (0: no repaint)."""
        relabelled = columns is not None and tuple(columns) != self._cols
        if columns is not None and relabelled:
            self._set_columns(columns)
            self._cells.clear()
            self._shown.clear()
            self._painted.clear()
            self._order = []
            self._keys = []
        now = self.clock()
        widened = relabelled or (self._shrink(now) if self._narrow_since else False)
        if self._kept is not None and (
            now - self._kept.since >= SHRINK_AFTER_S or self._kept.around != self._around()
        ):
            self._kept = None  # its time is up, or its pane changed size (a resized terminal)
            self._resize(keep=False)
        if self._unchanged(rows):
            if widened:
                self._redraw()
            return 0
        cursor_key = self._cursor_key()
        wanted = {r.key for r in rows}
        written = 0
        moved = False
        rewritten: list[str] = []
        self._note_comings_and_goings(len(self._shown), len(rows), now)
        for key in [k for k in self._shown if k not in wanted]:
            self._note_narrowing(self._cells[key], now)
            del self._shown[key], self._cells[key]
            self._painted.pop(key, None)
            moved = True
        for row in rows:
            last_row, old = self._shown.get(row.key, (None, None))
            if last_row is row:
                continue  # the very Row shown last time (rows are frozen): nothing to compare
            cells = ordered(row, self._cols)  # a missing or extra column fails here, loudly
            sig = tuple((c.text, c.level) for c in cells)
            if old is None:
                values = tuple(self._make(c, col) for c, col in zip(cells, self._cols, strict=True))
                self._cells[row.key] = values
                widened |= self._widen(values)
                written += len(values)
                moved = True
            elif old != sig:
                values_now = list(self._cells[row.key])
                for j, (c, col) in enumerate(zip(cells, self._cols, strict=True)):
                    if j < len(old) and old[j] == sig[j]:
                        continue
                    before = values_now[j]
                    values_now[j] = value = self._make(c, col)
                    width = cell_len(value.plain)
                    if width > self._widths[j]:
                        self._widths[j] = width
                        widened = True
                    elif width < self._widths[j] <= cell_len(before.plain):
                        self._narrow_since.setdefault(j, now)  # it held the width: it may narrow
                    written += 1
                    if self._sort is not None and self._sort[0] == col.key:
                        moved = True
                self._cells[row.key] = tuple(values_now)
                rewritten.append(row.key)
            self._shown[row.key] = (row, sig)
        order = [r.key for r in rows]
        if order != self._order:
            self._order = order
            self._rank = {key: i for i, key in enumerate(order)}
            moved = True
        if moved:
            self._resort()
            self._restore_cursor(cursor_key)
        if moved or widened:
            self._redraw()
        elif rewritten:
            for key in rewritten:
                self._refresh_row(self._at[key])
        self.touched += written
        return written

    def _widen(self, values: Sequence[CellText]) -> bool:
        # A value wider than its column widens it at once.
        widened = False
        for j, value in enumerate(values):
            width = cell_len(value.plain)
            if width > self._widths[j]:
                self._widths[j] = width
                widened = True
        return widened

    def _note_narrowing(self, values: Sequence[CellText], now: float) -> None:
        # A row going away that held a column's width: the column may narrow.
        for j, value in enumerate(values):
            if cell_len(value.plain) >= self._widths[j]:
                self._narrow_since.setdefault(j, now)

    def _shrink(self, now: float) -> bool:
        # A column narrows again once its widest value has been gone for SHRINK_AFTER_S: after
        # an incident the overview kept the width of "REST slow 2s" for good.
        changed = False
        for j, since in list(self._narrow_since.items()):
            full = self._widths[j]
            wanted = self._least_width(j)
            # The first value as wide as the column ends the search.
            for values in self._cells.values():
                wanted = max(wanted, cell_len(values[j].plain))
                if wanted >= full:
                    break
            if wanted >= full:
                del self._narrow_since[j]  # as wide a value is back: nothing to narrow
            elif now - since >= SHRINK_AFTER_S:
                del self._narrow_since[j]
                self._widths[j] = wanted
                changed = True
        return changed

    def _note_comings_and_goings(self, before: int, after: int, now: float) -> None:
        # Rows that keep coming back within SHRINK_AFTER_S of going (FLAPS times: a problem at
        # its threshold, processes starting and ending under load) flap: from then on the box
        # keeps its height when rows go. Rows that go for good, or come back once or twice while
        # a failover settles, shrink it at once: kept, they left blank lines where the newest
        # events are read at 80x24.
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
        shown_rows = self._shown
        if len(rows) != len(shown_rows) or len(rows) != len(self._order):
            return False
        for row, key in zip(rows, self._order, strict=True):
            last = shown_rows.get(key)
            if row.key != key or last is None or last[0] is not row:
                return False
        return True

    # Sorting and the cursor

    def sort_by(self, column: str | None, reverse: bool = False) -> None:
        """Sort by ``column`` (None: rows() order) and keep it that way across refreshes."""
        cursor_key = self._cursor_key()
        self._sort = None if column is None else (column, reverse)
        self._resort()
        self._restore_cursor(cursor_key)
        self._redraw()

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
        keys = [key for key in self._order if key in self._cells]
        rank = self._rank
        column = self._column_index(self._sort[0]) if self._sort is not None else None
        if self._sort is not None and column is not None:
            cells = self._cells
            keys.sort(key=lambda key: (cells[key][column].sort_key, rank[key]), reverse=self._sort[1])
        self._keys = keys
        self._at = {key: i for i, key in enumerate(keys)}
        if self.cursor_row >= len(keys):
            self.cursor_row = max(0, len(keys) - 1)

    def _column_index(self, key: str) -> int | None:
        return next((i for i, col in enumerate(self._cols) if col.key == key), None)

    def row_under_cursor(self) -> str | None:
        """The key of the row the cursor is on (None in an empty table)."""
        return self._keys[self.cursor_row] if 0 <= self.cursor_row < len(self._keys) else None

    def _cursor_key(self) -> str | None:
        # The row the cursor stays with when rows come, go or move: the one the DBA moved it to.
        # Untouched, or moved back to the first row, it stays on the first row, whichever that
        # is (as `tail -f` follows the end), and the view is not scrolled to follow it.
        return self.row_under_cursor() if self._follows_row else None

    def _restore_cursor(self, key: str | None) -> None:
        if key is None or (row := self._at.get(key)) is None:
            return
        if row != self.cursor_row:
            self.move_cursor(row=row, scroll=False)
            self._follows_row = True  # not the DBA's move: it still follows the row, even at the top

    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on display row ``row``, scrolled into view unless told not to."""
        row = max(0, min(row, len(self._keys) - 1))
        old, self.cursor_row = self.cursor_row, row
        self._follows_row = row != 0
        if old != row:
            self._refresh_row(old)
            self._refresh_row(row)
        if scroll:
            self._scroll_to_row(row, animate)

    def _scroll_to_row(self, row: int, animate: bool) -> None:
        room = self.scrollable_content_region.height - HEADER
        if room <= 0:
            return
        top = self.scroll_offset.y
        if row < top:
            self.scroll_to(y=row, animate=animate, immediate=True)
        elif row >= top + room:
            self.scroll_to(y=row - room + 1, animate=animate, immediate=True)

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER)

    def _key_move(self, row: int) -> None:
        self._hover_row = None  # the keyboard moves the cursor: the mouse's row no longer shows
        if self.show_cursor and self._keys:
            self.move_cursor(row=row)

    def action_choose(self) -> None:
        """Tell whoever holds the table which row the cursor is on."""
        key = self.row_under_cursor()
        if key is not None and self.show_cursor:
            self.post_message(self.Chosen(key))

    def action_cursor_up(self) -> None:
        """Move the cursor a row up."""
        self._key_move(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        """Move the cursor a row down."""
        self._key_move(self.cursor_row + 1)

    def action_page_up(self) -> None:
        """Move the cursor a page up."""
        self._key_move(self.cursor_row - self._page())

    def action_page_down(self) -> None:
        """Move the cursor a page down."""
        self._key_move(self.cursor_row + self._page())

    def action_first(self) -> None:
        """Move the cursor to the first row."""
        self._key_move(0)

    def action_last(self) -> None:
        """Move the cursor to the last row."""
        self._key_move(len(self._keys) - 1)

    def _row_of(self, style: Style) -> int | None:
        meta = style.meta
        row = meta.get("row")
        return row if isinstance(row, int) and 0 <= row < len(self._keys) else None

    def on_click(self, event: events.Click) -> None:
        """A click on a row puts the cursor there."""
        row = self._row_of(event.style)
        if row is not None and self.show_cursor:
            self.move_cursor(row=row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """Show the row under the mouse."""
        row = self._row_of(event.style)
        if row != self._hover_row:
            old, self._hover_row = self._hover_row, row
            for index in (old, row):
                if index is not None:
                    self._refresh_row(index)

    def on_leave(self, event: events.Leave) -> None:
        """The mouse left: no row shows it."""
        if self._hover_row is not None:
            old, self._hover_row = self._hover_row, None
            self._refresh_row(old)

    # Size and repaint

    def on_mount(self) -> None:
        """The header's size, before any row."""
        self._resize()

    def _table_width(self) -> int:
        return sum(self._widths) + 2 * PADDING * len(self._widths)

    def _redraw(self) -> None:
        # Rows came, went or moved, or a column changed width: a new size, and every line again.
        self._resize()
        self.refresh()

    def _refresh_row(self, index: int) -> None:
        # A row's line, where it is in view (the header stays above the rows).
        y = HEADER + index - self.scroll_offset.y
        if HEADER <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _resize(self, *, keep: bool = True) -> None:
        # A new virtual size makes Textual lay out the whole screen. When the table's box stays
        # the same (its width follows its pane; its height is capped by the pane before and
        # after, or kept) and no scrollbar comes or goes, only the scrollbars and the table
        # are drawn again.
        rows_height = HEADER + len(self._keys)
        old = self.virtual_size
        now = self.clock()
        if self._kept is not None:
            if rows_height >= self._kept.height:
                self._kept = None
            elif rows_height != old.height:
                self._kept = replace(self._kept, since=now)  # the wait starts over
        elif (
            keep
            and rows_height < old.height
            and self._auto_height()
            and not self._box_holds(old.height, rows_height)
            and now < self._flapping_until
        ):
            # Rows at their threshold come and go: the box keeps its height (blank lines below
            # the rows, and its scrollbar) until they have been fewer for SHRINK_AFTER_S.
            self._kept = KeptBox(old.height, now, self._around())
        new = Size(self._table_width(), self._kept.height if self._kept is not None else rows_height)
        if new == old:
            return
        if not self.is_mounted or not self.size.height or not self._box_holds(old.height, new.height):
            self.virtual_size = new
            return
        if not self._bars_hold(new):
            self.virtual_size = new
            return
        self.set_reactive(Widget.virtual_size, new)
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.window_virtual_size = new.height
        if self.show_horizontal_scrollbar:
            self.horizontal_scrollbar.window_virtual_size = new.width
        if self.scroll_y > self.max_scroll_y:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        if self.scroll_x > self.max_scroll_x:
            self.scroll_to(x=self.max_scroll_x, animate=False, immediate=True)

    def _bars_hold(self, new: Size) -> bool:
        # Each scrollbar that shows keeps showing and none comes: the box's inside stays put.
        inside = self.scrollable_content_region.size
        styles = self.styles
        wanted_x = styles.overflow_x == "scroll" or (styles.overflow_x == "auto" and new.width > inside.width)
        wanted_y = styles.overflow_y == "scroll" or (
            styles.overflow_y == "auto" and new.height > inside.height
        )
        return (wanted_x, wanted_y) == (self.show_horizontal_scrollbar, self.show_vertical_scrollbar)

    def _auto_height(self) -> bool:
        return self.styles.height is None or self.styles.height.is_auto

    def _around(self) -> Size:
        # The size of what holds the table: a kept box is let go when it changes.
        parent = self.parent
        return parent.size if isinstance(parent, Widget) else Size(0, 0)

    def _box_holds(self, before: int, after: int) -> bool:
        # An auto height follows the rows up to max-height: the box keeps its height when the
        # rows' height is the same, or while the rows overflow it both before and after.
        if after == before or not self._auto_height():
            return True
        inside = self.scrollable_content_region.height
        return inside > 0 and before > inside and after >= inside

    # Drawing

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render the lines in ``crop``, working out the styles once, not once per line."""
        self._look = self._new_look()
        try:
            return super().render_lines(crop)
        finally:
            self._look = None

    def _new_look(self) -> Look:
        component = self.get_component_rich_style
        return Look(
            self.rich_style,
            component("keyed-table--header"),
            component("keyed-table--cursor"),
            component("keyed-table--hover"),
        )

    def render_line(self, y: int) -> Strip:
        """One line of the view: the header, or the row scrolled to it."""
        look = self._look or self._new_look()
        width = self.size.width
        scroll_x, scroll_y = self.scroll_offset
        if y < HEADER:
            painted = self._header_line(look)
            index = -1
        else:
            index = y - HEADER + scroll_y
            if index >= len(self._keys):
                return Strip.blank(width, look.base)
            painted = self._row_line(index, look)
        strip = painted.strip.crop(scroll_x, scroll_x + width)
        strip = strip.adjust_cell_length(width, look.base).simplify()
        return self._drop_cut_columns(strip, scroll_x, width, index)

    def _meta(self, row: int, column: int) -> Style:
        # What a click or the mouse reads (row and column); one Style per place.
        meta = self._metas.get((row, column))
        if meta is None:
            meta = self._metas[(row, column)] = Style.from_meta({"row": row, "column": column})
        return meta

    def _header_line(self, look: Look) -> PaintedRow:
        key = (look.header, self.size.width, tuple(self._widths))
        if self._header is not None and self._header.look == key:
            return self._header
        parts = tuple(
            self._cell(label, -1, j, look.header, Style(), inner)
            for j, (label, inner) in enumerate(zip(self._labels, self._widths, strict=True))
        )
        edge = look.header + Style.from_meta({"row": -1, "column": 0, "out_of_bounds": True})
        self._header = self._joined(key, self._labels, parts, edge)
        return self._header

    def _row_line(self, index: int, look: Look) -> PaintedRow:
        key_of_row = self._keys[index]
        values = self._cells[key_of_row]
        cursor = self.show_cursor and index == self.cursor_row
        hover = self.show_cursor and index == self._hover_row
        component = Style()
        post = Style()
        if hover:
            component, post = component + look.hover, _post(component + look.hover)
        if cursor:
            component, post = component + look.cursor, _post(component + look.cursor)
        key = (index, look.base, component, self.size.width, tuple(self._widths))
        last = self._painted.get(key_of_row)
        earlier: tuple[CellText, ...] = ()
        if last is not None and last.look == key:
            if all(a is b for a, b in zip(last.cells, values, strict=True)):
                return last
            earlier = last.cells
        row_style = look.base
        parts = tuple(
            last.parts[j]
            if last is not None and j < len(earlier) and earlier[j] is value
            else self._cell(value, index, j, row_style + component, post, inner)
            for j, (value, inner) in enumerate(zip(values, self._widths, strict=True))
        )
        edge = row_style + component + Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
        painted = self._joined(key, values, parts, edge)
        self._painted[key_of_row] = painted
        return painted

    def _cell(
        self, value: CellText, row: int, column: int, style: Style, post: Style, inner: int
    ) -> list[Segment]:
        pre = style + self._meta(row, column)
        line = cell_line(value, inner, PADDING, pre, post)
        if line is None:
            line = cell_line(_fitted(value, inner), inner, PADDING, pre, post)
        return line or [Segment(" " * (inner + 2 * PADDING), pre + post)]

    def _joined(
        self,
        look: tuple[object, ...],
        cells: Sequence[CellText],
        parts: tuple[list[Segment], ...],
        edge: Style,
    ) -> PaintedRow:
        # The row's cells, then its style out to the widget's right edge.
        remaining = max(0, self.size.width - self._table_width())
        segments = [segment for part in parts for segment in part]
        segments.append(Segment(" " * remaining, edge))
        return PaintedRow(look, tuple(cells), parts, Strip(segments))

    def _drop_cut_columns(self, strip: Strip, scroll_x: int, width: int, row: int) -> Strip:
        """A column the view's edges cut: dropped whole ("5m" must never stand for "5 ms"), or,
        for a text column with room left, cut with "…"."""
        if scroll_x == 0 and self._table_width() <= width:
            return strip  # the usual case: every column in view
        end = scroll_x + width
        left, right, ellipsis = 0, width, False  # the part of the strip that shows whole columns
        start = 0
        for index, (col, inner) in enumerate(zip(self._cols, self._widths, strict=True)):
            stop = start + inner + 2 * PADDING
            if start < scroll_x < stop:
                left = stop - scroll_x
            if start < end < stop:
                room = end - start - 2 * PADDING
                ellipsis = not col.right and room >= MIN_TEXT_ROOM
                right = max(left, width - PADDING if ellipsis else start - scroll_x)
                # Only a value that runs on past the edge ends in "…".
                ellipsis = ellipsis and self._cell_width(row, index) > room
            start = stop
        if (left, right) == (0, width):
            return strip
        segments = list(strip)
        style = segments[-1].style if segments else None  # a dropped column keeps the row's background
        parts = [Strip.blank(left, style)] if left else []
        kept = strip.crop(left, right)
        if ellipsis:
            kept = Strip.join([kept.crop(0, right - left - 1), Strip([Segment("…", style)])])
        parts.append(kept)
        if right < width:
            parts.append(Strip.blank(width - right, style))
        return Strip.join(parts)

    def _cell_width(self, row: int, column: int) -> int:
        # Cells the value on display row ``row`` takes in ``column`` (-1: the header's label).
        if row < 0:
            return cell_len(self._labels[column].plain)
        return cell_len(self._cells[self._keys[row]][column].plain)
