"""Problems pane of the overview: the worst current problems of the cluster, worst first."""

from __future__ import annotations

import functools

from pgtop_ha.models.health import cluster_problems
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.panes.base import ROWS_KEPT, Column, Context, PaneSpec, Row, cell, dedupe, state

COLUMNS = (
    Column("level", "Level"),
    Column("node", "Node"),
    Column("text", "Problem"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """Every current problem; keyed by what it is (not its figure) so a lasting problem keeps its row."""
    problems = cluster_problems(snapshot, ctx.thresholds, ctx.pools, ctx.now)
    return dedupe([_problem_row(p.ident, p.node, p.level, p.text) for p in problems] or [NO_PROBLEMS])


@functools.lru_cache(maxsize=ROWS_KEPT)
def _problem_row(ident: str, node: str | None, level: Level, text: str) -> Row:
    cells = {"level": state(level), "node": cell(node or "cluster"), "text": cell(text, level)}
    return Row(key=ident, node=node, cells=cells)


NO_PROBLEMS = Row(
    key="|ok", cells={"level": state(Level.OK), "node": cell("cluster"), "text": cell("no problems")}
)


PANE = PaneSpec(
    id="problems",
    title="Problems",
    key=None,  # part of the dashboard (key 0 at ≥ 160x48), no view of its own
    columns=COLUMNS,
    rows=rows,
    help="the worst current problems, worst first",
)
