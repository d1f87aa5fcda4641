"""A pane on screen: a bordered box with one keyed table per table of its PaneSpec."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.panes.base import Context, PaneSpec, Row, Table
from pgtop_ha.ui.widgets.keyed_table import KeyedTable, LevelStyles


def matches(row: Row, node_filter: str) -> bool:
    """True when the row's node (or its other words: a session's application) contains ``node_filter``."""
    if not node_filter:
        return True
    needle = node_filter.lower()
    return needle in (row.node or "").lower() or needle in row.key.lower() or needle in row.also.lower()


class Pane(Vertical):
    """One of the console's panes; it does no work while hidden (see MonitorScreen)."""

    DEFAULT_CSS = """
    Pane { height: 1fr; }
    """

    class Built(Message):
        """A pane's tables were mounted after the start (its first time on screen): show it now."""

        def __init__(self, pane_id: str) -> None:
            super().__init__()
            self.pane_id = pane_id

    def __init__(self, spec: PaneSpec, *, built: bool = True) -> None:
        super().__init__(id=f"pane-{spec.id}", classes="pane")
        self.pane_id = spec.id
        self.spec = spec
        self.specs: tuple[Table, ...] = spec.tables
        self.border_title = f"{spec.key} {spec.title}" if spec.key else spec.title
        self.tables: dict[str, KeyedTable] = {}
        self._shown_snapshot: ClusterSnapshot | None = None
        self._version: object = None
        self._level_styles: LevelStyles | None = None
        # A pane not on the first screen gets its tables when first shown (build()): styling
        # ~20 hidden tables was a third of the time to the first frame.
        self._built = built

    def compose(self) -> ComposeResult:
        """One keyed table per spec, unless the pane waits for its first showing."""
        if self._built:
            yield from self._make_tables()

    def _make_tables(self) -> list[KeyedTable]:
        for spec in self.specs:
            table = KeyedTable(spec.columns, id=f"t-{spec.id}", cursor=spec.cursor)
            if spec.sort:
                table.sort_by(spec.sort, spec.reverse)
            if spec.fill:
                # Its rows past the pane's bottom are cut, not scrolled to: a last table read,
                # not browsed, with its first rows the ones that matter (the newest events).
                table.styles.height = "1fr"
                table.styles.overflow_y = "hidden"
            if self._level_styles is not None:
                table.use_level_styles(self._level_styles)
            self.tables[spec.id] = table
        return list(self.tables.values())

    @property
    def ready(self) -> bool:
        """Its tables exist and are mounted (show() does nothing before)."""
        return bool(self.tables) and all(t.is_mounted for t in self.tables.values())

    @property
    def filled(self) -> bool:
        """Its tables are mounted and show a snapshot."""
        return self.ready and self._shown_snapshot is not None

    def shows(self, snapshot: ClusterSnapshot) -> bool:
        """Its tables are mounted and were last brought up to date with this very snapshot."""
        return self.ready and self._shown_snapshot is snapshot

    def build(self) -> None:
        """Mount the tables of a pane shown for the first time; posts Built when they are."""
        if self._built:
            return
        self._built = True
        self.call_later(self._mount_tables, self._make_tables())

    async def _mount_tables(self, tables: list[KeyedTable]) -> None:
        await self.mount_all(tables)
        self.post_message(self.Built(self.pane_id))

    def show(self, snapshot: ClusterSnapshot, ctx: Context, node_filter: str, version: object) -> int:
        """Bring the tables up to date; the same snapshot and ``version`` as last time: no work."""
        # Identity, not ==: a snapshot object is kept while it is the one shown, so no id reuse.
        if snapshot is self._shown_snapshot and version == self._version:
            return 0
        if not self.ready:
            return 0  # built but not mounted yet: Built brings it here again
        self._shown_snapshot = snapshot
        self._version = version
        written = 0
        names = ctx.names(snapshot)
        for spec in self.specs:
            table = self.tables[spec.id]
            table.use_names(names)
            rows = [r for r in spec.rows_of(snapshot, ctx) if matches(r, node_filter)]
            columns = spec.dynamic_columns(snapshot) if spec.dynamic_columns else None
            written += table.apply(rows, columns)
            want = bool(rows) or (spec is self.specs[0] and not spec.optional)
            if table.display != want:
                table.display = want
        return written

    def forget(self) -> None:
        """Forget what was shown so the next show() recomputes (e.g. after a theme change)."""
        self._shown_snapshot = None

    def use_level_styles(self, styles: LevelStyles) -> None:
        """Give every table the level styles of the current theme."""
        self._level_styles = styles
        for table in self.tables.values():
            table.use_level_styles(styles)
        self.forget()
