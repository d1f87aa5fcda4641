"""What a pane is: its spec (id, title, key, columns, rows()) and the rows of cells it returns.

A pane module declares one ``PANE = PaneSpec(...)``; listing it in ``panes/registry.py`` gives it
a key, a place on the dashboard, a help line and a snapshot test (CONTRIBUTING.md, "Adding a pane").
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol, TypeVar

from pgtop_ha.engines.timeline import ActiveCheck
from pgtop_ha.judge.rules import Rule
from pgtop_ha.judge.view import Judgement, judgement
from pgtop_ha.models.derive import member_names
from pgtop_ha.models.event import Event
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.memo import kept
from pgtop_ha.models.needs import NONE, Needs
from pgtop_ha.models.servers import unjoined
from pgtop_ha.models.snapshot import POSTGRES_OFF, ClusterSnapshot
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark, Verdict
from pgtop_ha.ui.format import finite

SortValue = float | str

# On a quiet cluster a pane's rows come back the same each second, and the same Row object is
# skipped by KeyedTable.apply unread. So a row is built from its model and handed out through
# same_row(), which gives back last time's object while the cells are equal; an age goes in as
# format.age_step, so it changes when its shown text does.
ROWS_KEPT = 512
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell: its text, an optional state for colour and the rule behind it, and its sort value."""

    text: str
    level: Level | None = None
    sort: SortValue | None = None
    rule: str | None = None  # the judge's rule id behind a level above OK (judge.rules)

    def sort_key(self) -> tuple[int, SortValue]:
        """Numbers before text so mixed columns still sort; unknown numbers sort lowest."""
        value = self.text if self.sort is None else self.sort
        if isinstance(value, str):
            return (1, value)
        return (0, sortable(value))


@dataclass(frozen=True, slots=True)
class Row:
    """One table row: cells by column key; ``key`` keeps it in place, ``node`` serves the filter."""

    key: str
    cells: Mapping[str, Cell]
    node: str | None = None
    also: str = ""  # more words the `/` filter matches (a session's application and user)


class ColumnMismatch(ValueError):
    """A row whose cells do not name exactly the table's columns (a pane bug, not bad data)."""


def ordered(row: Row, columns: Sequence[Column]) -> list[Cell]:
    """The row's cells in column order; ColumnMismatch when a column is missing or one is extra."""
    if len(row.cells) == len(columns):
        try:
            return [row.cells[c.key] for c in columns]
        except KeyError:
            pass
    keys = [c.key for c in columns]
    missing = [k for k in keys if k not in row.cells]
    extra = [k for k in row.cells if k not in keys]
    raise ColumnMismatch(f"row {row.key!r}: no cell for columns {missing}, cells for unknown columns {extra}")


@dataclass(frozen=True, slots=True)
class Column:
    """A column: key, header label, whether numbers align right, and its widest text."""

    key: str
    label: str
    right: bool = False
    width: int | None = None  # longer text ends in "…" (so a narrow view needs no sideways scroll)
    names: bool = False  # members' names: cut to what tells them apart instead ("…1a-01")


@dataclass(frozen=True)
class Context:
    """What rows() may look at besides the snapshot: settings, time, recent history, events."""

    thresholds: Thresholds
    pools: Pools
    now: datetime
    interval: float = 1.0
    history: Sequence[ClusterSnapshot] = ()  # older snapshots, oldest first, current excluded
    events: Sequence[Event] = ()
    checks: Sequence[ActiveCheck] = ()  # the timeline's disagreements past their grace period
    outages: Sequence[float] | None = None  # past failovers' write outages (engines.stopwatch.past_outages)
    judgement: Judgement | None = None  # the session's judgement of the snapshot shown

    # What several panes derive from the same snapshot, derived once per context (one context
    # serves every pane of one refresh): {what: (the snapshot it was derived from, the result)}.
    # init=False: a context made from this one by dataclasses.replace (another time, other
    # events) starts with its own, empty.
    _derived: dict[Hashable, tuple[object, object]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @property
    def previous(self) -> ClusterSnapshot | None:
        """The snapshot before the current one, if any."""
        return self.history[-1] if self.history else None

    def judged(self, snapshot: ClusterSnapshot) -> Judgement:
        """The snapshot's judgement: the session's, else made once for this context."""
        j = self.judgement
        if j is not None and j.snapshot is snapshot:
            return j
        return self._once(
            "judged", snapshot, lambda: judgement(snapshot, self.thresholds, self.pools, outages=self.outages)
        )

    def member_problems(self, snapshot: ClusterSnapshot, name: str) -> tuple[Verdict, ...]:
        """What is wrong with member ``name``, as judged."""
        return self.judged(snapshot).member(name)

    def names(self, snapshot: ClusterSnapshot) -> tuple[str, ...]:
        """The names a name column tells apart, once per context and snapshot.

        Every member's name (models.derive.member_names), then HAProxy's servers that are no member
        (the HAProxy pane shows them by their own names: `postgresql_10.0.0.11_5432`).
        """

        def derive() -> tuple[str, ...]:
            members = member_names(snapshot)
            return (*members, *unjoined(snapshot.haproxy.servers, members))

        return self._once("names", snapshot, derive)

    def problems(self, snapshot: ClusterSnapshot) -> tuple[Verdict, ...]:
        """Every problem of the cluster, as judged."""
        return self.judged(snapshot).problems

    def on(self, snapshot: ClusterSnapshot, node: str | None) -> tuple[Verdict, ...]:
        """The problems of ``node`` (None: the cluster's own), for a column's rules to colour by."""
        return self.judged(snapshot).on(node)

    def forecast(self, snapshot: ClusterSnapshot) -> FailoverForecast:
        """If the leader died now, as judged."""
        return self.judged(snapshot).forecast

    def check(self, rule: str) -> ActiveCheck | None:
        """The active check of ``rule`` (judge.checks.CHECK_RULES), if one is past its grace."""
        return next((a for a in self.checks if a.check.rule == rule), None)

    def _once(self, what: Hashable, snapshot: ClusterSnapshot, derive: Callable[[], _T]) -> _T:
        return kept(self._derived, what, snapshot, derive)


# A member's name in a pane half the dashboard wide: "pg-prod-eu-central-1a-01" took a third
# of it, twice in Replication ("…central-1a-01", format.fit_name).
NAME_WIDTH = 14


def name_column(key: str, label: str) -> Column:
    """A column of members' names, past NAME_WIDTH cut to what tells them apart."""
    return Column(key, label, width=NAME_WIDTH, names=True)


def cell(
    text: str, level: Level | None = None, sort: SortValue | None = None, rule: str | None = None
) -> Cell:
    """Shorthand for Cell."""
    return Cell(text, level, sort, rule)


def marked(
    text: str, marks: Iterable[Mark], part: str = "", sort: SortValue | None = None, *, ok: bool = False
) -> Cell:
    """A cell coloured by the worst of ``marks`` for ``part``, naming that mark's rule.

    ``ok``: a graded value shows OK when no mark holds (a figure against its thresholds).
    """
    worst = max((m for m in marks if m.part == part), key=lambda m: m.level, default=None)
    if worst is None or worst.level == Level.OK:
        return Cell(text, Level.OK if ok else None, sort)
    return Cell(text, worst.level, sort, worst.rule)


def worst_cell(text: str, marks: Iterable[Mark], sort: SortValue | None = None) -> Cell:
    """A graded cell coloured by the worst of ``marks`` whatever column each names (OK when none)."""
    worst = max(marks, key=lambda m: m.level, default=None)
    if worst is None or worst.level == Level.OK:
        return Cell(text, Level.OK, sort)
    return Cell(text, worst.level, sort, worst.rule)


def of_problem(text: str, problem: Verdict | None, sort: SortValue | None = None) -> Cell:
    """A cell coloured by ``problem`` (the worst one of its subject), naming its rule."""
    if problem is None or problem.level == Level.OK:
        return Cell(text, None, sort)
    return Cell(text, problem.level, sort, problem.rule)


def blanks(*keys: str) -> dict[str, Cell]:
    """Empty cells for these columns (spread into a row's cells: ``**blanks("a", "b")``)."""
    return {key: Cell("") for key in keys}


def sortable(value: float | int | None) -> float:
    """``value`` as a float that sorts; unknown, NaN or beyond a float sorts first."""
    known = finite(value)
    return float("-inf") if known is None else known


def more_row(columns: Sequence[Column], node: str, shown: int, total: int | None, what: str) -> list[Row]:
    """The row saying how many of a node's ``what`` a source's row cap left out, if any."""
    if total is None or total <= shown:
        return []
    first, second = columns[0].key, columns[1].key
    cells = {
        first: cell(node),
        second: cell(f"+{total - shown} {what}"),
        **blanks(*(c.key for c in columns[2:])),
    }
    return [Row(key=f"{node}|more", node=node, cells=cells)]


NOT_READ = "not read"


def _not_read_rows(columns: Sequence[Column], snapshot: ClusterSnapshot) -> list[Row]:
    """A row per member whose PostgreSQL did not answer: its name and "not read", not a silent gap."""
    first = columns[0].key
    # The first text column past the name holds the words; a health column says it is unknown.
    words = next(c.key for c in columns[1:] if not c.right and c.key != "health")
    unread = [(n.name, NOT_READ) for n in snapshot.nodes if not n.reachable]
    if not snapshot.postgres_read:
        unread += [(m.name, POSTGRES_OFF) for m in snapshot.members]
    out = []
    for name, why in sorted(unread):
        cells = {c.key: Cell("?" if c.key == "health" else "") for c in columns}
        cells[first], cells[words] = cell(name), cell(why)
        out.append(same_row(f"{name}|not-read", cells, name))
    return out


def why_row(columns: Sequence[Column], node: str, column: str, reason: str) -> Row:
    """A member's one row saying why a read gave nothing (a grant, an extension): ``reason`` in ``column``."""
    # Not graded: a missing grant or extension is a fact to act on, not a fault `check` reports.
    name = next((c.key for c in columns if c.names), columns[0].key)
    cells = {**blanks(*(c.key for c in columns)), name: cell(node), column: cell(reason)}
    return Row(key=f"{node}|why", node=node, cells=cells)


def placeholder(columns: Sequence[Column], text: str, key: str = "|none") -> Row:
    """The one row of a pane with nothing to show: '-' first, OK, ``text`` in the last column."""
    first, last = columns[0].key, columns[-1].key
    rest = [c.key for c in columns[1:-1] if c.key != "health"]
    cells = {first: cell("-"), "health": state(Level.OK), **blanks(*rest), last: cell(text)}
    return Row(key=key, cells=cells)


def num(text: str, value: float | int | None, level: Level | None = None, rule: str | None = None) -> Cell:
    """A number cell: shown as ``text``, sorted by ``value`` (unknown or absurd sorts first)."""
    return Cell(text, level, sortable(value), rule)


def state(level: Level, rule: str | None = None) -> Cell:
    """The state word with its symbol (✔ OK, ▲ WARN, ✖ CRIT), sorted worst last."""
    return Cell(level.word, level, float(level), rule if level > Level.OK else None)


def by_rule(shown: Cell, problems: Iterable[Verdict], *rules: Rule, ok: bool = False) -> Cell:
    """``shown`` coloured by the worst of ``problems`` that is one of ``rules``: the column's rules.

    ``ok``: a graded value shows OK when none holds (a figure against its thresholds).
    """
    ids = {r.id for r in rules}
    worst = max((p for p in problems if p.rule in ids), key=lambda p: p.level, default=None)
    if worst is None or worst.level == Level.OK:
        return replace(shown, level=Level.OK) if ok else shown
    return Cell(shown.text, worst.level, shown.sort, worst.rule)


def worst_state(marks: Iterable[Mark | Verdict]) -> Cell:
    """The state word of the worst of ``marks`` or problems (OK when none), naming its rule."""
    worst: Mark | Verdict | None = max(marks, key=lambda m: m.level, default=None)
    return state(Level.OK) if worst is None else state(Level(worst.level), worst.rule)


@dataclass(frozen=True)
class Table:
    """One keyed table: its id, columns, the pure function making its rows, its default sort."""

    id: str
    columns: tuple[Column, ...]
    rows: RowsFn
    sort: str | None = None  # default sort column
    reverse: bool = False
    dynamic_columns: ColumnsFn | None = None  # when columns depend on the snapshot
    optional: bool = False  # hidden while it has no rows (a pane's later tables always are)
    cursor: bool = True  # a row cursor (off for tables that are read, not browsed)
    fill: bool = False  # takes the pane's height left below the others: the first rows that fit
    per_member: bool = False  # rows from each member's PostgreSQL: one that did not answer says so
    postgres: bool = False  # rows from PostgreSQL alone: with it not read at all, each member says so

    def rows_of(self, snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
        """Its rows, then a "not read" row per member a per-member table has nothing from."""
        if self.postgres and not snapshot.postgres_read:
            return _not_read_rows(self.columns, snapshot)
        out = self.rows(snapshot, ctx)
        return [*out, *_not_read_rows(self.columns, snapshot)] if self.per_member else out


@dataclass(frozen=True)
class Place:
    """Where a pane shows besides its own view, and how tall it is there."""

    overview: bool = False  # in the overview below the dashboard size (cluster, problems)
    dashboard: bool = True  # on the dashboard; False: reached by its key only (Probes)
    span: int = 1  # dashboard columns it spans (of DASHBOARD_COLUMNS)
    max_height: int | None = None  # as tall as its rows up to this; None: shares the rest


@dataclass(frozen=True, kw_only=True)
class PaneSpec(Table):
    """A pane: its first table (id, columns, rows) plus title, key, help line and placement."""

    title: str
    key: str | None  # its number key; None: no view of its own (shown in the overview only)
    help: str  # one line for the ? help, after the key and title
    more: tuple[Table, ...] = ()  # further tables below the first (the slot presence matrix)
    place: Place = field(default_factory=Place)
    needs: Needs = NONE  # optional reads (models/needs.py) done only while this pane is on screen
    focus_needs: Needs = NONE  # further reads while it is the only pane on screen (fresher memory)
    # The backend a row stands for, (member, pid), for the operator's cancel and terminate keys.
    backend_of: Callable[[str], tuple[str, int] | None] | None = None

    @property
    def tables(self) -> tuple[Table, ...]:
        """Every table of the pane, the first one (the pane's own columns and rows) first."""
        return (self, *self.more)


class ColumnsFn(Protocol):
    """Columns that depend on the snapshot (e.g. one per member)."""

    def __call__(self, snapshot: ClusterSnapshot, /) -> tuple[Column, ...]: ...


class RowsFn(Protocol):
    """The pure part of a pane: a snapshot and context in, rows out."""

    def __call__(self, snapshot: ClusterSnapshot, ctx: Context, /) -> list[Row]: ...


def same_row(key: str, cells: Mapping[str, Cell], node: str | None = None) -> Row:
    """A Row of ready cells: the same object while its key, node and cells stay the same."""
    return _cells_row(key, node, tuple(cells.items()))


@functools.lru_cache(maxsize=ROWS_KEPT)
def _cells_row(key: str, node: str | None, cells: tuple[tuple[str, Cell], ...]) -> Row:
    return Row(key=key, cells=dict(cells), node=node)


class SameInputs:
    """Rows built from immutable inputs, given again while every input is the very object of last time."""

    # Identity, never ==: comparing 30 processes field by field costs what building their rows
    # does. The read path hands over last cycle's models while nothing moved (collect/postgres.py).

    def __init__(self, limit: int = ROWS_KEPT) -> None:
        self._last: dict[str, tuple[tuple[object, ...], list[Row]]] = {}
        self._limit = limit

    def rows(self, key: str, inputs: tuple[object, ...], build: Callable[[], list[Row]]) -> list[Row]:
        """Last time's rows for ``key`` when its ``inputs`` are the same objects, else ``build()``."""
        last = self._last.get(key)
        if last is not None and len(last[0]) == len(inputs) and all(map(operator.is_, last[0], inputs)):
            return list(last[1])
        built = build()
        if len(self._last) >= self._limit:
            self._last.clear()
        self._last[key] = (inputs, list(built))
        return built


def dedupe(rows: list[Row]) -> list[Row]:
    """Make row keys unique by suffixing repeats (#2, #3...) so the table diff stays keyed."""
    seen: dict[str, int] = {}
    out = []
    for row in rows:
        n = seen.get(row.key, 0) + 1
        seen[row.key] = n
        out.append(row if n == 1 else Row(f"{row.key}#{n}", row.cells, row.node))
    return out
