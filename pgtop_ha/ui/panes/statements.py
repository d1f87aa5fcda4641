"""Statements pane: per member, the statements that took the most execution time lately.

Read every 10 s while this pane is on screen (pg_stat_statements, the "statements" need): the
rates are the difference between two reads, so the first read shows none yet.
"""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.sources import node_state
from pgtop_ha.models.statements import BETWEEN_READS, StatementRate, Statements
from pgtop_ha.ui.format import age, duration, per_second, query_line, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    cell,
    name_column,
    num,
    why_row,
)

COLUMNS = (
    name_column("node", "Node"),
    Column("load", "Time/s", right=True),
    Column("calls", "Calls/s", right=True),
    Column("mean", "Mean", right=True),
    Column("rows", "Rows/s", right=True),
    Column("read", "Read/s", right=True),
    Column("hit", "Hit/s", right=True),
    Column("db", "DB", width=12),
    Column("user", "User", width=12),
    Column("query", "Statement", width=70),
)


def mean(ms: float | None) -> str:
    """A statement's mean time: sub-millisecond ones keep their digits (0.36ms), long ones 1.4s."""
    if ms is None or not 0 <= ms < 1e12:
        return "-" if ms is None else "?"
    if ms < 10:
        return f"{ms:.2f}ms"
    if ms < 1000:
        return f"{ms:.0f}ms"
    return duration(ms / 1000)


def _row(node: str, rank: int, s: StatementRate) -> Row:
    busy = s.time_ms_s / 1000  # seconds of execution per second: 1.0 is one core
    return Row(
        # Keyed by rank: the busiest statement is the first row whichever it is this time.
        key=f"{node}|#{rank}",
        node=node,
        cells={
            "node": cell(node),
            "load": num(f"{busy:.2f}", busy),
            "calls": num(per_second(s.calls_s), s.calls_s),
            "mean": num(mean(s.mean_ms), s.mean_ms),
            "rows": num(per_second(s.rows_s), s.rows_s),
            "read": num(per_second(s.blks_read_s), s.blks_read_s),
            "hit": num(per_second(s.blks_hit_s), s.blks_hit_s),
            "db": cell(shown(s.datname or "-")),
            "user": cell(shown(s.usename or "-")),
            "query": cell(query_line(s.query or f"queryid {s.queryid}")),
        },
    )


def _last_read(name: str, ctx: Context) -> Statements | None:
    """The node's statements as its last read gave them (a snapshot carries them once a read)."""
    for snap in reversed(ctx.history):
        node = snap.node(name)
        if node is not None and node.statements is not None:
            return node.statements
    return None


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Per node its busiest statements since the read before, or why there are none."""
    out: list[Row] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node_state(node) == "unreachable":
            continue
        reason = node.unavailable.get("statements")
        st = node.statements
        if st is None and reason == BETWEEN_READS:
            st, reason = _last_read(node.name, ctx), None
        if reason or st is None:
            out.append(why_row(COLUMNS, node.name, "query", reason or "not read yet"))
        elif st.over_s is None:
            out.append(
                why_row(
                    COLUMNS,
                    node.name,
                    "query",
                    f"first read of {st.entries} entries: rates from the next, in 10s",
                )
            )
        elif not st.top:
            out.append(why_row(COLUMNS, node.name, "query", f"no statement ran in the last {age(st.over_s)}"))
        else:
            out.extend(_row(node.name, rank, s) for rank, s in enumerate(st.top, 1))
    return out


PANE = PaneSpec(
    id="statements",
    title="Statements",
    key="t",
    columns=COLUMNS,
    rows=rows,
    help="top statements by time (pg_stat_statements, every 10s)",
    place=Place(dashboard=False),
    needs=frozenset({"statements"}),
    per_member=True,
)
