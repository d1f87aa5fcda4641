"""pgBackRest pane: per stanza, status, newest backup of each type, archive range, spool and queue.

Joined with the Archiver pane's view of the primary: its ``.ready`` count and segments behind are
the queue pgBackRest's archive-push works through, measured against archive-push-queue-max.
"""

from __future__ import annotations

from pgtop_ha.judge.backup import no_stanza_level, no_stanza_text
from pgtop_ha.judge.grades import (
    FULL_BACKUP_WARN_S,
    backup_level,
    no_full_backup_level,
    queue_level,
    queue_state,
    stale_read_level,
    stanza_level,
    unread_level,
)
from pgtop_ha.models.pgbackrest import BackupInfo, QueueState
from pgtop_ha.models.snapshot import Archiver, ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import age, count, human_bytes, shown
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Place, Row, blanks, cell, num, state

COLUMNS = (
    Column("stanza", "Stanza"),
    Column("health", "Health"),
    Column("status", "Status"),
    Column("full", "Full", right=True),
    Column("diff", "Diff", right=True),
    Column("incr", "Incr", right=True),
    Column("wal_max", "Archive max"),
    Column("ready", "Ready", right=True),
    Column("behind", "Behind", right=True),
    Column("queue", "Queue/max", right=True),
    Column("spool", "Spool ok/err", right=True),
    Column("error", "Newest error"),
)
_REST = ("status", "full", "diff", "incr", "wal_max", "ready", "behind", "queue", "spool")
NOT_CONFIGURED = "pgBackRest not read: set [pgbackrest] enabled = true (and command, config)"


def _primary_archiver(snapshot: ClusterSnapshot) -> Archiver | None:
    """The archiver of the node that is not in recovery (only a primary archives)."""
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node.in_recovery is False and node.archiver is not None:
            return node.archiver
    return None


def _backup_cell(backup: BackupInfo | None, warn_after: float | None = None) -> tuple[str, Level | None]:
    if backup is None:
        return "-", None
    return age(backup.age_s), backup_level(backup, warn_after)


def _queue_text(queue: QueueState) -> str:
    if queue.queue_bytes is None:
        return "-"
    if queue.queue_max_bytes is None:
        return f"{human_bytes(queue.queue_bytes)}/none"
    return f"{human_bytes(queue.queue_bytes)}/{human_bytes(queue.queue_max_bytes)}"


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per stanza; one explaining row when the source is off or has not answered."""
    pb = snapshot.pgbackrest
    if pb is None or not pb.enabled:
        cells = {"stanza": cell("-"), "health": cell("-"), **blanks(*_REST)}
        return [Row(key="|off", cells={**cells, "error": cell(NOT_CONFIGURED)})]
    archiver = _primary_archiver(snapshot)
    ready = archiver.ready_count if archiver else None
    behind = archiver.segments_behind if archiver else None
    queue = queue_state(ready, pb.queue_max_bytes)
    if not pb.stanzas:
        text = shown(pb.error or no_stanza_text(pb, snapshot))
        level = no_stanza_level(bool(pb.error), pb.asked)
        cells = {"stanza": cell("-"), "health": state(level), **blanks(*_REST)}
        return [Row(key="|none", cells={**cells, "error": cell(text, level)})]
    out = []
    spools = {s.stanza: s for s in pb.spools}
    for st in pb.stanzas:
        level = stanza_level(st.ok, bool(st.repo_errors))
        full_text, full_level = _backup_cell(st.full, FULL_BACKUP_WARN_S)
        diff_text, diff_level = _backup_cell(st.diff)
        incr_text, incr_level = _backup_cell(st.incr)
        if st.full is None:
            full_level = no_full_backup_level()
        queue_grade = queue_level(queue.level)
        spool = spools.get(st.name)
        spool_level = unread_level(spool is not None and bool(spool.error_count))
        for extra in (full_level, diff_level, incr_level, queue_grade, spool_level):
            if extra is not None:
                level = max(level, extra)
        if pb.error:  # the last poll failed: what is shown is older than it looks
            level = stale_read_level(level)
        error = pb.error or (spool.newest_error if spool else None) or "; ".join(st.repo_errors) or ""
        status = st.status_message or "-"
        if st.backup_running:
            status += " (backup running)"
        out.append(
            Row(
                key=st.name,
                cells={
                    "stanza": cell(shown(st.name)),
                    "health": state(level),
                    "status": cell(shown(status), None if st.ok else stanza_level(False, False)),
                    "full": num(full_text, st.full.age_s if st.full else None, full_level),
                    "diff": num(diff_text, st.diff.age_s if st.diff else None, diff_level),
                    "incr": num(incr_text, st.incr.age_s if st.incr else None, incr_level),
                    "wal_max": cell(st.archive_max or "-"),
                    "ready": num(count(ready), ready),
                    "behind": num(count(behind), behind),
                    "queue": num(
                        _queue_text(queue),
                        queue.share if queue.share is not None else queue.queue_bytes,
                        queue_grade,
                    ),
                    "spool": cell(
                        f"{count(spool.ok_count)}/{count(spool.error_count)}"
                        if spool and not spool.error
                        else "-",
                        spool_level,
                    ),
                    "error": cell(shown(error), unread_level(bool(error))),
                },
            )
        )
    return out


PANE = PaneSpec(
    id="pgbackrest",
    title="pgBackRest",
    key="b",
    columns=COLUMNS,
    rows=rows,
    help="backups, archive range, spool, queue (key only)",
    place=Place(dashboard=False),
    needs=frozenset({"pgbackrest"}),
)
