"""pg_wal on disk, the archiver's queue and the xmin horizon, graded."""

from __future__ import annotations

from pgtop_ha.judge.rules import ARCHIVER_FAILING, ARCHIVER_READY
from pgtop_ha.models.snapshot import Archiver, HorizonHolder, WalDisk
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark


def wal_disk_bound(w: WalDisk) -> int:
    """What PostgreSQL keeps in pg_wal by itself: max_wal_size + wal_keep_size (0 when unknown)."""
    return (w.max_wal_size or 0) + (w.wal_keep_size or 0)


def wal_disk_ratio(w: WalDisk) -> float | None:
    """pg_wal on disk over wal_disk_bound."""
    bound = wal_disk_bound(w)
    return None if w.bytes is None or bound <= 0 else w.bytes / bound


def wal_disk_level(t: Thresholds, w: WalDisk | None) -> Level:
    """pg_wal's size graded against max_wal_size + wal_keep_size."""
    return Level.OK if w is None else t.wal_disk_ratio.grade(wal_disk_ratio(w))


def horizon_level(t: Thresholds, h: HorizonHolder) -> Level:
    """A holder of the xmin horizon graded by how long it has held it and by how many transactions."""
    return max(t.horizon_s.grade(h.age_s), t.horizon_xacts.grade(h.xact_age))


def horizon_holder(h: HorizonHolder) -> str:
    """Who holds it, in a few words: "pid 812 (psql, idle in transaction)", "slot lab_sub"."""
    if h.kind == "slot":
        return f"slot {h.name}"
    if h.kind == "prepared":
        return f"prepared transaction {h.name}"
    what = ", ".join(x for x in (h.application_name, h.state) if x)
    who = f"{'standby' if h.kind == 'standby' else 'pid'} {h.pid}"
    return f"{who} ({what})" if what else who


def ready_level(t: Thresholds, ready: int | None) -> Level:
    """The archiver's .ready queue graded."""
    return t.archive_ready.grade(ready)


def archive_failing(a: Archiver) -> bool:
    """The archiver's last attempt failed: a failure newer than the last success (or none yet)."""
    return a.last_failed_time is not None and (
        a.last_archived_time is None or a.last_failed_time > a.last_archived_time
    )


def archiver_marks(t: Thresholds, a: Archiver, primary: bool | None) -> tuple[Mark, ...]:
    """The archiver's .ready queue graded, and WARN while a primary's archiving fails."""
    out = []
    if (lv := ready_level(t, a.ready_count)) > Level.OK:
        out.append(Mark(ARCHIVER_READY.id, lv, f"archiver: {a.ready_count} segments waiting", "ready"))
    # A standby's archiver does not run (archive_mode=on): a failure it still lists is its past.
    if primary is not False and archive_failing(a):
        text = f"archiving fails ({a.failed_count} failures, the last one newer than any success)"
        out.append(Mark(ARCHIVER_FAILING.id, Level.WARN, text, "failed"))
    return tuple(out)
