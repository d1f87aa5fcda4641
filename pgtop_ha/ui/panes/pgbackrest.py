"""pgBackRest pane: per stanza, status, newest backup of each type, archive range, spool and queue.

Joined with the Archiver pane's view of the primary: its ``.ready`` count and segments behind are
the queue pgBackRest's archive-push works through, measured against archive-push-queue-max.
"""

from __future__ import annotations

from pgtop_ha.judge.view import no_stanza_text, primary_archiver, push_queue
from pgtop_ha.models.pgbackrest import BackupInfo, QueueState
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import age, count, human_bytes, shown
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    blanks,
    cell,
    marked,
    num,
    sortable,
    worst_state,
)

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


def _age(backup: BackupInfo | None) -> str:
    return "-" if backup is None else age(backup.age_s)


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
    archiver = primary_archiver(snapshot)
    ready = archiver.ready_count if archiver else None
    behind = archiver.segments_behind if archiver else None
    queue = push_queue(snapshot)
    if not pb.stanzas:
        marks = ctx.judged(snapshot).no_stanza()
        text = shown(pb.error or no_stanza_text(pb, snapshot))
        cells = {"stanza": cell("-"), "health": worst_state(marks), **blanks(*_REST)}
        return [Row(key="|none", cells={**cells, "error": marked(text, marks, "error")})]
    out = []
    spools = {s.stanza: s for s in pb.spools}
    graded = ctx.judged(snapshot).backups()
    for st in pb.stanzas:
        marks = graded.get(st.name, ())
        spool = spools.get(st.name)
        error = pb.error or (spool.newest_error if spool else None) or "; ".join(st.repo_errors) or ""
        # The error column says what the read, the spool or the repository said: the same rule's level.
        said_by = "error" if pb.error else "spool" if spool and spool.newest_error else "status"
        status = st.status_message or "-"
        if st.backup_running:
            status += " (backup running)"
        out.append(
            Row(
                key=st.name,
                cells={
                    "stanza": cell(shown(st.name)),
                    "health": worst_state(marks),
                    "status": marked(shown(status), marks, "status"),
                    "full": marked(
                        _age(st.full), marks, "full", sortable(st.full.age_s if st.full else None)
                    ),
                    "diff": marked(
                        _age(st.diff), marks, "diff", sortable(st.diff.age_s if st.diff else None)
                    ),
                    "incr": marked(
                        _age(st.incr), marks, "incr", sortable(st.incr.age_s if st.incr else None)
                    ),
                    "wal_max": cell(st.archive_max or "-"),
                    "ready": num(count(ready), ready),
                    "behind": num(count(behind), behind),
                    "queue": marked(
                        _queue_text(queue),
                        marks,
                        "queue",
                        sortable(queue.share if queue.share is not None else queue.queue_bytes),
                    ),
                    "spool": marked(
                        f"{count(spool.ok_count)}/{count(spool.error_count)}"
                        if spool and not spool.error
                        else "-",
                        marks,
                        "spool",
                    ),
                    "error": marked(shown(error), marks, said_by) if error else cell(""),
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
