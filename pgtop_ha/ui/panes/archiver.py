"""Archiver pane: per node, the .ready queue, segments behind, last archived, failures, trend."""

from __future__ import annotations

from pgtop_ha.judge.grades import archiving_level
from pgtop_ha.judge.wal import archive_failing, archiver_level, ready_level
from pgtop_ha.models.derive import age_s
from pgtop_ha.models.snapshot import Archiver, ClusterSnapshot
from pgtop_ha.ui.format import age, age_step, count, sparkline
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    cell,
    name_column,
    num,
    same_row,
    state,
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
        out.append(_archiver_row(node.name, a, ctx))
    return out


def _archiver_row(node: str, a: Archiver, ctx: Context) -> Row:
    """The row of one node's archiver, built from its model."""
    history: list[float | None] = []
    for snap in ctx.history[-9:]:
        old = snap.node(node)
        history.append(None if old is None or old.archiver is None else old.archiver.ready_count)
    history.append(a.ready_count)
    t = ctx.thresholds
    warn = archiving_level(archive_failing(a))
    ok_age = age_step(age_s(ctx.now, a.last_archived_time))  # stepped: the row repaints as its text changes
    fail_age = age_step(age_s(ctx.now, a.last_failed_time))
    cells = {
        "node": cell(node),
        "health": state(archiver_level(t, a)),
        "ready": num(count(a.ready_count), a.ready_count, ready_level(t, a.ready_count)),
        "behind": num(count(a.segments_behind), a.segments_behind),
        "last": cell(a.last_archived_wal or "-"),
        "last_age": num(age(ok_age), ok_age),
        "archived": num(count(a.archived_count), a.archived_count),
        "failed": num(count(a.failed_count), a.failed_count, warn),
        "failed_age": num(age(fail_age), fail_age, warn),
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
