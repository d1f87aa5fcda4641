"""Grades of the single values panes show: each rule once, so a cell and a problem cannot disagree.

A cell's level is None where it is merely shown (no colour), a Level where it is judged.
"""

from __future__ import annotations

from pgtop_ha.judge.leader import is_leader
from pgtop_ha.models.locks import STOPS_EVERYTHING, TreeLine
from pgtop_ha.models.snapshot import ClusterSnapshot, LockCount, Probe
from pgtop_ha.models.thresholds import Level


def down_level(down: bool) -> Level | None:
    """A source that does not answer (a PostgreSQL DOWN, a member not in the DCS) is CRIT."""
    return Level.CRIT if down else None


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
