"""A pane on screen: a bordered box with one keyed table per table of its PaneSpec."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.panes.base import Context, PaneSpec, Row, Table
from pgtop_ha.ui.widgets.keyed_table import KeyedTable, LevelStyles


def matches(row: Row, node_filter: str) -> bool:
    """True when the row belongs to a node whose name contains ``node_filter``."""
    if not node_filter:
        return True
    needle = node_filter.lower()
    return needle in (row.node or "").lower() or needle in row.key.lower()


class Pane(Vertical):
    """One of the console's panes; it does no work while hidden (see MonitorScreen)."""

    DEFAULT_CSS = """
    Pane { height: 1fr; }
    """

    def __init__(self, spec: PaneSpec) -> None:
        super().__init__(id=f"pane-{spec.id}", classes="pane")
        self.pane_id = spec.id
        self.spec = spec
        self.specs: tuple[Table, ...] = spec.tables
        self.border_title = f"{spec.key} {spec.title}" if spec.key else spec.title
        self.tables: dict[str, KeyedTable] = {}
        self._shown_snapshot: ClusterSnapshot | None = None
        self._version: object = None

    def compose(self) -> ComposeResult:
        """One keyed table per spec."""
        for spec in self.specs:
            table = KeyedTable(spec.columns, id=f"t-{spec.id}", cursor=spec.cursor)
            if spec.sort:
                table.sort_by(spec.sort, spec.reverse)
            self.tables[spec.id] = table
            yield table

    def show(self, snapshot: ClusterSnapshot, ctx: Context, node_filter: str, version: object) -> int:
        """Bring the tables up to date; the same snapshot and ``version`` as last time: no work."""
        # Identity, not ==: a snapshot object is kept while it is the one shown, so no id reuse.
        if snapshot is self._shown_snapshot and version == self._version:
            return 0
        self._shown_snapshot = snapshot
        self._version = version
        written = 0
        for spec in self.specs:
            table = self.tables[spec.id]
            rows = [r for r in spec.rows(snapshot, ctx) if matches(r, node_filter)]
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
        for table in self.tables.values():
            table.use_level_styles(styles)
        self.forget()
