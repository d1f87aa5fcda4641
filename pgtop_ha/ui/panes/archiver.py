"""Archiver pane: per node, the .ready queue, segments behind, last archived, failures, trend."""

from __future__ import annotations

import functools

from pgtop_ha.judge.grades import archiving_level
from pgtop_ha.judge.health import archive_failing, archiver_level, ready_level
from pgtop_ha.models.derive import age_s
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import age, age_step, count, sparkline
from pgtop_ha.ui.panes.base import (
    ROWS_KEPT,
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    cell,
    name_column,
    num,
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
        history: list[float | None] = []
        for snap in ctx.history[-9:]:
            old = snap.node(node.name)
            history.append(None if old is None or old.archiver is None else old.archiver.ready_count)
        history.append(a.ready_count)
        out.append(
            _archiver_row(
                node.name,
                archiver_level(ctx.thresholds, a),
                a.ready_count,
                ready_level(ctx.thresholds, a.ready_count),
                a.segments_behind,
                a.last_archived_wal,
                age_step(age_s(ctx.now, a.last_archived_time)),
                a.archived_count,
                a.failed_count,
                archive_failing(a),
                age_step(age_s(ctx.now, a.last_failed_time)),
                tuple(history),
            )
        )
    return out


@functools.lru_cache(maxsize=ROWS_KEPT)
def _archiver_row(
    node: str,
    level: Level,
    ready: int | None,
    ready_grade: Level,
    behind: int | None,
    last_wal: str | None,
    ok_age: float | None,  # seconds since the last archived segment, as age_step
    archived: int | None,
    failed: int | None,
    failing: bool,
    fail_age: float | None,  # seconds since the last failure, as age_step
    history: tuple[float | None, ...],  # .ready counts of the last snapshots, this one last
) -> Row:
    warn = archiving_level(failing)
    return Row(
        key=node,
        node=node,
        cells={
            "node": cell(node),
            "health": state(level),
            "ready": num(count(ready), ready, ready_grade),
            "behind": num(count(behind), behind),
            "last": cell(last_wal or "-"),
            "last_age": num(age(ok_age), ok_age),
            "archived": num(count(archived), archived),
            "failed": num(count(failed), failed, warn),
            "failed_age": num(age(fail_age), fail_age, warn),
            "trend": cell(sparkline(history), sort=ready or 0),
        },
    )


PANE = PaneSpec(
    id="archiver",
    title="Archiver",
    key="6",
    columns=COLUMNS,
    rows=rows,
    help=".ready queue, segments behind, last archived, failures",
)
