"""What every pane's pure part returns: rows of cells keyed for an in-place table diff."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from pgtop_ha.models.events import Event
from pgtop_ha.models.health import Level, Pools, ThresholdsLike
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import finite

SortValue = float | str


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: its text, an optional state for colour, and the value it sorts by."""

    text: str
    level: Level | None = None
    sort: SortValue | None = None

    def sort_key(self) -> tuple[int, SortValue]:
        """Numbers before text so mixed columns still sort; unknown numbers sort lowest."""
        value = self.text if self.sort is None else self.sort
        if isinstance(value, str):
            return (1, value)
        return (0, _sortable(value))


@dataclass(frozen=True, slots=True)
class Row:
    """One table row; ``key`` keeps it in place across refreshes, ``node`` serves the filter."""

    key: str
    cells: tuple[Cell, ...]
    node: str | None = None


@dataclass(frozen=True, slots=True)
class Column:
    """A column: key, header label, and whether numbers align right."""

    key: str
    label: str
    right: bool = False


@dataclass(frozen=True)
class Context:
    """What rows() may look at besides the snapshot: settings, time, recent history, events."""

    thresholds: ThresholdsLike
    pools: Pools
    now: datetime
    interval: float = 1.0
    history: Sequence[ClusterSnapshot] = ()  # older snapshots, oldest first, current excluded
    events: Sequence[Event] = ()

    @property
    def previous(self) -> ClusterSnapshot | None:
        """The snapshot before the current one, if any."""
        return self.history[-1] if self.history else None


def cell(text: str, level: Level | None = None, sort: SortValue | None = None) -> Cell:
    """Shorthand for Cell."""
    return Cell(text, level, sort)


def _sortable(value: float | int | None) -> float:
    """``value`` as a float that sorts; unknown, NaN or beyond a float sorts first."""
    known = finite(value)
    return float("-inf") if known is None else known


def num(text: str, value: float | int | None, level: Level | None = None) -> Cell:
    """A number cell: shown as ``text``, sorted by ``value`` (unknown or absurd sorts first)."""
    return Cell(text, level, _sortable(value))


def state(level: Level) -> Cell:
    """The state word with its symbol (✔ OK, ▲ WARN, ✖ CRIT), sorted worst last."""
    return Cell(level.word, level, float(level))


@dataclass(frozen=True)
class PaneSpec:
    """A pane: its id, title, number key, columns, and the pure function making its rows."""

    id: str
    title: str
    key: str
    columns: tuple[Column, ...]
    rows: RowsFn
    sort: str | None = None  # default sort column
    reverse: bool = False
    dynamic_columns: ColumnsFn | None = None  # when columns depend on the snapshot


class ColumnsFn(Protocol):
    """Columns that depend on the snapshot (e.g. one per member)."""

    def __call__(self, snapshot: ClusterSnapshot, /) -> tuple[Column, ...]: ...


class RowsFn(Protocol):
    """The pure part of a pane: a snapshot and context in, rows out."""

    def __call__(self, snapshot: ClusterSnapshot, ctx: Context, /) -> list[Row]: ...


def dedupe(rows: list[Row]) -> list[Row]:
    """Make row keys unique by suffixing repeats (#2, #3...) so the table diff stays keyed."""
    seen: dict[str, int] = {}
    out = []
    for row in rows:
        n = seen.get(row.key, 0) + 1
        seen[row.key] = n
        out.append(row if n == 1 else Row(f"{row.key}#{n}", row.cells, row.node))
    return out


def elapsed(snapshot: ClusterSnapshot, prev: ClusterSnapshot | None) -> float | None:
    """Seconds between two snapshots; None when there is no earlier one or time ran backwards."""
    if prev is None:
        return None
    dt = (snapshot.taken_at - prev.taken_at).total_seconds()
    return dt if dt > 0 else None
