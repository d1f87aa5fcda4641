"""Problems pane of the overview: the worst current problems of the cluster, worst first."""

from __future__ import annotations

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, dedupe, name_column, same_row, state

COLUMNS = (
    Column("level", "Level"),
    name_column("node", "Node"),
    Column("text", "Problem"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Every current problem; keyed by what it is (not its figure) so a lasting problem keeps its row."""
    out = [
        same_row(
            p.ident,
            {
                "level": state(p.level, p.rule),
                "node": cell(p.subject or "cluster"),
                "text": cell(p.text, p.level, rule=p.rule),
            },
            p.subject,
        )
        for p in ctx.problems(snapshot)
    ]
    if not out:
        ok = {"level": state(Level.OK), "node": cell("cluster"), "text": cell("no problems")}
        out.append(same_row("|ok", ok))
    return dedupe(out)


PANE = PaneSpec(
    id="problems",
    title="Problems",
    key=None,  # part of the dashboard (key 0 at ≥ 160x48), no view of its own
    columns=COLUMNS,
    rows=rows,
    help="the worst current problems, worst first",
)
