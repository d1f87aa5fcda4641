"""pgBackRest's rules: each stanza's marks, and the stanza archive_command pushes to against those read."""

from __future__ import annotations

import re

from pgtop_ha.judge.rules import (
    PGBACKREST_BACKUP_ERROR,
    PGBACKREST_FULL_AGE,
    PGBACKREST_NO_STANZA,
    PGBACKREST_QUEUE,
    PGBACKREST_READ,
    PGBACKREST_SPOOL,
    PGBACKREST_STANZA,
)
from pgtop_ha.models.pgbackrest import WAL_SEGMENT_BYTES, PgBackRestState, QueueLevel, QueueState, StanzaInfo
from pgtop_ha.models.snapshot import Archiver, ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark

_STANZA = re.compile(r"--stanza[= ]+['\"]?([A-Za-z0-9_.-]{1,64})")


def archived_stanza(snapshot: ClusterSnapshot) -> str | None:
    """The stanza archive_command pushes to, as Patroni's /config or a node's settings give it."""
    commands: list[str | None] = []
    if snapshot.patroni_config is not None:
        commands.append(snapshot.patroni_config.parameters.get("archive_command"))
    for node in snapshot.nodes:
        commands += [s.setting for s in node.parameters or () if s.name == "archive_command"]
    for command in commands:
        if command and "pgbackrest" in command and (found := _STANZA.search(command)):
            return found[1]
    return None


def no_stanza_text(state: PgBackRestState, snapshot: ClusterSnapshot) -> str:
    """Why no stanza was read, naming the one archive_command uses when the config read lacks it."""
    stanza = archived_stanza(snapshot)
    if stanza is not None and stanza not in {s.name for s in state.stanzas}:
        where = f"config {state.config}" if state.config else "no pgbackrest.conf found"
        return (
            f"archive_command pushes to stanza {stanza!r}, which pgBackRest as read here ({where}) "
            "does not hold; set [pgbackrest] config and stanza"
        )
    return state.no_stanza or "no stanza reported"


def no_stanza_level(error: bool, asked: bool = True) -> Level:
    """No stanza: CRIT when `pgbackrest info` failed, WARN when it lists none, OK when nobody asked."""
    if not asked:
        return Level.OK
    return Level.CRIT if error else Level.WARN


NO_VALID_BACKUPS = 2  # pgbackrest info's status code for a stanza with no backup yet

# A full backup older than this is worth a look: a daily or weekly schedule has slipped.
FULL_BACKUP_WARN_S = 8 * 86400
# Share of archive-push-queue-max at which the queue warns, and at which it is critical: past
# 100% pgBackRest drops WAL (archiving "succeeds" without the segment and PITR has a hole).
QUEUE_WARN_SHARE = 0.5
QUEUE_CRIT_SHARE = 0.8


def stanza_marks(state: PgBackRestState, stanza: StanzaInfo, queue: QueueState) -> tuple[Mark, ...]:
    """Every rule that holds for one stanza, each naming the pane's cell it colours."""
    said = f"pgBackRest stanza {stanza.name}"
    out: list[Mark] = []
    # Status 2 is "no valid backups": the full backup's rule says it, at its own level.
    if (not stanza.ok and stanza.status_code != NO_VALID_BACKUPS) or stanza.repo_errors:
        why = stanza.status_message or "repository errors"
        out.append(Mark(PGBACKREST_STANZA.id, Level.CRIT, f"{said}: {why}", "status"))
    for part, backup in (("full", stanza.full), ("diff", stanza.diff), ("incr", stanza.incr)):
        if backup is not None and backup.error:
            text = f"{said}: newest {part} backup in error"
            out.append(Mark(PGBACKREST_BACKUP_ERROR.id, Level.CRIT, text, part))
    if stanza.full is None:
        out.append(Mark(PGBACKREST_FULL_AGE.id, Level.WARN, f"{said}: no full backup", "full"))
    elif (stanza.full.age_s or 0) > FULL_BACKUP_WARN_S:
        days = int((stanza.full.age_s or 0) // 86400)
        text = f"{said}: newest full backup {days} days old"
        out.append(Mark(PGBACKREST_FULL_AGE.id, Level.WARN, text, "full"))
    level = {"warn": Level.WARN, "crit": Level.CRIT, "dropping": Level.CRIT}.get(queue.level)
    if level is not None:
        what = (
            "dropping WAL"
            if queue.level == "dropping"
            else f"{(queue.share or 0):.0%} of archive-push-queue-max"
        )
        out.append(Mark(PGBACKREST_QUEUE.id, level, f"pgBackRest archive-push queue {what}", "queue"))
    spool = next((s for s in state.spools if s.stanza == stanza.name), None)
    if spool is not None and spool.error_count:
        out.append(
            Mark(
                PGBACKREST_SPOOL.id,
                Level.WARN,
                f"{said}: {spool.error_count} failed pushes in the spool",
                "spool",
            )
        )
    if state.error:
        # The last read failed: what the row shows is older than it looks.
        out.append(Mark(PGBACKREST_READ.id, Level.WARN, f"pgBackRest not read: {state.error}", "error"))
    return tuple(out)


def queue_state(
    ready_count: int | None, queue_max_bytes: int | None, segment_bytes: int = WAL_SEGMENT_BYTES
) -> QueueState:
    """The push queue (``.ready`` segments times the segment size) and its level against the queue limit."""
    if ready_count is None or ready_count < 0:
        return QueueState(queue_max_bytes=queue_max_bytes)
    queued = ready_count * segment_bytes
    if not queue_max_bytes or queue_max_bytes <= 0:
        return QueueState(ready_count=ready_count, queue_bytes=queued)
    share = queued / queue_max_bytes
    level: QueueLevel = "ok"
    if share >= 1:
        level = "dropping"
    elif share >= QUEUE_CRIT_SHARE:
        level = "crit"
    elif share >= QUEUE_WARN_SHARE:
        level = "warn"
    return QueueState(
        ready_count=ready_count, queue_bytes=queued, queue_max_bytes=queue_max_bytes, share=share, level=level
    )


def primary_archiver(snapshot: ClusterSnapshot) -> Archiver | None:
    """The archiver of the node that is not in recovery (only a primary archives)."""
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if node.in_recovery is False and node.archiver is not None:
            return node.archiver
    return None


def push_queue(snapshot: ClusterSnapshot) -> QueueState:
    """The primary's archive-push queue against pgBackRest's archive-push-queue-max."""
    archiver = primary_archiver(snapshot)
    limit = snapshot.pgbackrest.queue_max_bytes if snapshot.pgbackrest is not None else None
    return queue_state(archiver.ready_count if archiver else None, limit)


def no_stanza_marks(snapshot: ClusterSnapshot) -> tuple[Mark, ...]:
    """pgBackRest read but listing no stanza: why, graded (nothing when nobody asked for it)."""
    state = snapshot.pgbackrest
    if state is None or not state.enabled or state.stanzas:
        return ()
    level = no_stanza_level(bool(state.error), state.asked)
    if level == Level.OK:
        return ()
    if state.error:
        return (Mark(PGBACKREST_READ.id, level, f"pgBackRest not read: {state.error}", "error"),)
    return (Mark(PGBACKREST_NO_STANZA.id, level, no_stanza_text(state, snapshot), "error"),)


def backup_marks(snapshot: ClusterSnapshot) -> dict[str, tuple[Mark, ...]]:
    """Each stanza read and the rules that hold for it (none when pgBackRest is not read)."""
    state = snapshot.pgbackrest
    if state is None or not state.enabled:
        return {}
    queue = push_queue(snapshot)
    return {st.name: stanza_marks(state, st, queue) for st in state.stanzas}
