"""Archiver pane: per node, the .ready queue, segments behind, last archived, failures, trend."""

from __future__ import annotations

from pgtop_ha.models.derive import age_s
from pgtop_ha.models.leader import pg_primary
from pgtop_ha.models.snapshot import Archiver, ClusterSnapshot
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import age, age_step, count, sparkline
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    cell,
    marked,
    name_column,
    num,
    same_row,
    sortable,
    worst_state,
)

COLUMNS = (
    name_column("node", "Node"),
    Column("health", "Health"),
    Column("ready", "Ready", right=True),
    Column("behind", "Behind", right=True),
    Column("last", "Last archived"),
    Column("last_age", "Age", right=True),
    Column("archived", "Archived", right=True),
    Column("failed", "Failed", right=True),
    Column("failed_age", "Last fail", right=True),
    Column("trend", "Ready trend"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per node that reports an archiver (a standby's counters stay near zero)."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        a = node.archiver
        if a is None:
            reason = node.unavailable.get("archiver") or (node.error if not node.reachable else None)
            out.append(
                Row(
                    key=node.name,
                    node=node.name,
                    cells={
                        "node": cell(node.name),
                        "health": cell("-"),
                        "ready": cell(""),
                        "behind": cell(""),
                        "last": cell(reason or "no data"),
                        **blanks("last_age", "archived", "failed", "failed_age", "trend"),
                    },
                )
            )
            continue
        out.append(_archiver_row(node.name, a, ctx, ctx.judged(snapshot).archiver(a, pg_primary(node))))
    return out


def _archiver_row(node: str, a: Archiver, ctx: Context, found: tuple[Mark, ...]) -> Row:
    """The row of one node's archiver, built from its model and the judge's marks on it."""
    history: list[float | None] = []
    for snap in ctx.history[-9:]:
        old = snap.node(node)
        history.append(None if old is None or old.archiver is None else old.archiver.ready_count)
    history.append(a.ready_count)
    ok_age = age_step(age_s(ctx.now, a.last_archived_time))  # stepped: the row repaints as its text changes
    fail_age = age_step(age_s(ctx.now, a.last_failed_time))
    cells = {
        "node": cell(node),
        "health": worst_state(found),
        "ready": marked(count(a.ready_count), found, "ready", sortable(a.ready_count), ok=True),
        "behind": num(count(a.segments_behind), a.segments_behind),
        "last": cell(a.last_archived_wal or "-"),
        "last_age": num(age(ok_age), ok_age),
        "archived": num(count(a.archived_count), a.archived_count),
        "failed": marked(count(a.failed_count), found, "failed", sortable(a.failed_count)),
        "failed_age": marked(age(fail_age), found, "failed", sortable(fail_age)),
        "trend": cell(sparkline(history), sort=a.ready_count or 0),
    }
    return same_row(node, cells, node)


PANE = PaneSpec(
    id="archiver",
    title="Archiver",
    key="6",
    columns=COLUMNS,
    rows=rows,
    help=".ready queue, segments behind, last archived, failures",
    postgres=True,
)
