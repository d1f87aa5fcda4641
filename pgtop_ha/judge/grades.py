"""Grades of the single values panes show: each rule once, so a cell and a problem cannot disagree.

A cell's level is None where it is merely shown (no colour), a Level where it is judged.
"""

from __future__ import annotations

from pgtop_ha.judge.health import is_leader
from pgtop_ha.models.locks import STOPS_EVERYTHING, TreeLine
from pgtop_ha.models.pgbackrest import WAL_SEGMENT_BYTES, BackupInfo, QueueLevel, QueueState
from pgtop_ha.models.snapshot import ClusterSnapshot, HugePages, LockCount, Probe
from pgtop_ha.models.thresholds import Level

# Share of archive-push-queue-max at which the queue warns, and at which it is critical: past
# 100% pgBackRest drops WAL (archiving "succeeds" without the segment and PITR has a hole).
QUEUE_WARN_SHARE = 0.5
QUEUE_CRIT_SHARE = 0.8

# A full backup older than this is worth a look: a daily or weekly schedule has slipped.
FULL_BACKUP_WARN_S = 8 * 86400


def down_level(down: bool) -> Level | None:
    """A source that does not answer (a PostgreSQL DOWN, a member not in the DCS) is CRIT."""
    return Level.CRIT if down else None


def reach_level(down: bool, slow: bool) -> Level:
    """A member's reachability: CRIT when a source is down, WARN while one is slow."""
    return Level.CRIT if down else Level.WARN if slow else Level.OK


def pending_level(pending: bool) -> Level | None:
    """A setting (or a member) waiting for a restart is WARN."""
    return Level.WARN if pending else None


def drift_level(differs: bool) -> Level | None:
    """A setting whose value differs between members is WARN."""
    return Level.WARN if differs else None


# A source or a part that could not be read (an error row, a missing grant).
UNREAD = Level.WARN


def unread_level(unread: bool) -> Level | None:
    """A source or a part that could not be read is UNREAD; one that was read is not graded."""
    return UNREAD if unread else None


def archiving_level(failing: bool) -> Level | None:
    """Archiving that fails is WARN (the .ready queue is graded by its own band)."""
    return Level.WARN if failing else None


def cold_cache_level(new_share: float | None, old_share: float | None) -> Level | None:
    """A new primary with less than half the old one's cache in use is WARN: reads go to disk."""
    cold = new_share is not None and old_share is not None and new_share < old_share / 2
    return Level.WARN if cold else None


def hugepages_level(h: HugePages, in_use: bool | None) -> Level | None:
    """huge_pages on or try with shared memory not in them (a silent fallback) is WARN."""
    return Level.WARN if in_use is False and h.setting in ("on", "try") and h.total else None


def wait_kind_level(kind: str) -> Level | None:
    """Waits on a heavyweight lock are WARN; other wait classes are shown, not judged."""
    return Level.WARN if kind == "lock" else None


def wal_status_level(wal_status: str | None) -> Level | None:
    """A slot whose WAL is lost is CRIT."""
    return Level.CRIT if wal_status == "lost" else None


def permanent_slot_absent_level(on_leader: bool) -> Level:
    """A permanent slot missing: CRIT on the leader (its consumer breaks), WARN on a replica."""
    return Level.CRIT if on_leader else Level.WARN


def upstream_level(mismatch: bool) -> Level | None:
    """A standby not streaming from its replicatefrom member is WARN; otherwise merely shown."""
    return Level.WARN if mismatch else None


def walsender_level(state: str | None) -> Level | None:
    """A walsender that is not streaming (catchup, startup, backup) is WARN."""
    return Level.WARN if state != "streaming" else None


def receiver_level(status: str) -> Level:
    """A standby's own WAL receiver: OK while streaming, else WARN."""
    return Level.OK if status == "streaming" else Level.WARN


def silent_standby_level(level: Level) -> Level:
    """A standby silent past two status intervals is at least WARN (its times are unknown)."""
    return max(level, Level.WARN)


def blocker_level(line: TreeLine) -> Level | None:
    """The root of a blocking tree with waiters behind it is CRIT."""
    return Level.CRIT if line.waiters and line.depth == 0 else None


def lock_mode_level(mode: str | None, waiting: bool = True) -> Level | None:
    """A wait for the lock that stops every query of a table is CRIT, any other wait WARN."""
    if mode is None or not waiting:
        return None
    return Level.CRIT if mode == STOPS_EVERYTHING else Level.WARN


def stopping_mode_level(mode: str | None) -> Level | None:
    """The mode column: only the lock that stops everything is coloured."""
    return Level.CRIT if mode == STOPS_EVERYTHING else None


def lock_count_level(c: LockCount) -> Level | None:
    """Locks of a mode with sessions waiting on them, graded by what the mode stops."""
    return lock_mode_level(c.mode, bool(c.waiting))


def backup_level(backup: BackupInfo | None, warn_after_s: float | None = None) -> Level | None:
    """A backup in error is CRIT; a full one older than ``warn_after_s`` WARN."""
    if backup is None:
        return None
    if backup.error:
        return Level.CRIT
    if warn_after_s is not None and (backup.age_s or 0) > warn_after_s:
        return Level.WARN
    return None


def no_full_backup_level() -> Level:
    """A stanza without a full backup is WARN: nothing to restore from."""
    return Level.WARN


def stanza_level(ok: bool, repo_errors: bool) -> Level:
    """A stanza pgBackRest reports in error, or with repository errors, is CRIT."""
    return Level.OK if ok and not repo_errors else Level.CRIT


def queue_level(word: str) -> Level | None:
    """The async push queue against archive-push-queue-max (pgbackrest.queue_state's word)."""
    return {"warn": Level.WARN, "crit": Level.CRIT, "dropping": Level.CRIT}.get(word)


def stale_read_level(level: Level) -> Level:
    """What a failed last read still shows is older than it looks: at least WARN."""
    return max(level, Level.WARN)


def pgpool_primary_level(pgpool_primary_not_leader: bool) -> Level | None:
    """pgpool-II's primary that is not Patroni's leader is CRIT: writes go to a replica."""
    return Level.CRIT if pgpool_primary_not_leader else None


def pgpool_status_level(status: str | None) -> Level | None:
    """A backend pgpool-II keeps down or unused is WARN: no reads go there."""
    return Level.WARN if status in ("down", "unused") else None


def probe_level(snapshot: ClusterSnapshot, probe: Probe) -> Level:
    """CRIT when writes fail or land on a non-leader; WARN when a read endpoint fails."""
    writes = probe.kind in ("writer", "write")
    if not probe.ok:
        if probe.last_ok_at is None and probe.errors == 0:
            return Level.WARN  # not probed yet, or refused by allowed_hosts
        return Level.CRIT if writes else Level.WARN
    member = snapshot.member(probe.answered_by) if probe.answered_by else None
    # A writer answered by a replica: writes would fail. Reads served by the primary are fine,
    # but not what the pool is for.
    wrong = bool(
        probe.in_recovery or (member is not None and snapshot.cluster.leader and not is_leader(member))
    )
    on_primary = probe.kind == "reader" and probe.in_recovery is False and len(snapshot.members) > 1
    if writes and wrong:
        return Level.CRIT
    return Level.WARN if on_primary else Level.OK


def errors_level(errors: int) -> Level | None:
    """A probe's run of errors is CRIT while it lasts."""
    return Level.CRIT if errors else None


def write_outage_level() -> Level:
    """A write outage the write probe measured is WARN once it has ended."""
    return Level.WARN


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
