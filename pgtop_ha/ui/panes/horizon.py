"""Horizon pane: per node, what holds back the xmin horizon (and so vacuum), oldest first."""

from __future__ import annotations

from pgtop_ha.judge.rules import HORIZON_HELD
from pgtop_ha.models.snapshot import ClusterSnapshot, HorizonHolder
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import age, age_step, count, query_line
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    cell,
    name_column,
    num,
    same_row,
    state,
)

COLUMNS = (
    name_column("node", "Node"),
    Column("health", "Health"),
    Column("kind", "Kind"),
    Column("holder", "Holder"),
    Column("user", "User"),
    Column("app", "Application"),
    Column("state", "State"),
    Column("xacts", "Xacts", right=True),
    Column("age", "Held", right=True),
    Column("query", "Query"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Every holder a reachable node reports, the oldest xmin first."""
    out: list[Row] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node.reachable:
            judged = ctx.judged(snapshot)
            out.extend(_row(node.name, rank, h, judged.horizon(h)) for rank, h in enumerate(node.horizon, 1))
    return out


def _row(node: str, rank: int, h: HorizonHolder, level: Level) -> Row:
    """The row of one holder, built from its model and its grade."""
    held = age_step(h.age_s)  # stepped: the row repaints as its text changes
    holder = h.name if h.kind in ("slot", "prepared") else str(h.pid) if h.pid is not None else "?"
    cells = {
        "node": cell(node),
        "health": state(level, HORIZON_HELD.id),
        "kind": cell(h.kind),
        "holder": cell(holder or "?"),
        "user": cell(h.user or "-"),
        "app": cell(h.application_name or "-"),
        "state": cell(h.state or "-"),
        "xacts": num(count(h.xact_age), h.xact_age),
        "age": num(age(held), held),
        "query": cell(query_line(h.query or "")),
    }
    # Keyed by rank: the oldest holder keeps the top row while others come and go below it.
    return same_row(f"{node}|#{rank}", cells, node)


PANE = PaneSpec(
    id="horizon",
    title="Horizon",
    key="h",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="who holds the xmin horizon, oldest first (key only)",
    place=Place(dashboard=False),
)
