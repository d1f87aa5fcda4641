"""Pure derivations from snapshots: lag per stage, rates between cycles, slot presence, WAL math.

Nothing here does I/O or reads a clock: every time comes from the snapshots themselves.
"""

from __future__ import annotations

import re
from datetime import datetime

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.poolers import PgBouncerState, PgpoolState
from pgtop_ha.models.snapshot import (
    ClusterSnapshot,
    CopyProgress,
    HugePages,
    NodeSnapshot,
    Replication,
)

_WAL_NAME = re.compile(
    r"^([0-9A-Fa-f]{8})([0-9A-Fa-f]{8})([0-9A-Fa-f]{8})(\.partial|\.[0-9A-Fa-f]{8}\.backup)?$"
)
_LSN_TEXT = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")


class WalFileNameError(ValueError):
    """A string that is not a WAL segment file name (e.g. a .history file)."""


# --- WAL arithmetic ---------------------------------------------------------------------------


def parse_lsn(text: str) -> int:
    """An LSN like ``0/3000060`` as an integer; ValueError if not one."""
    match = _LSN_TEXT.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not an LSN like 0/3000060")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def format_lsn(lsn: int) -> str:
    """An integer LSN in PostgreSQL's ``X/X`` notation."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _segments_per_xlogid(wal_segment_size: int) -> int:
    if wal_segment_size <= 0 or wal_segment_size & (wal_segment_size - 1):
        raise WalFileNameError(f"wal_segment_size {wal_segment_size} is not a power of two")
    return max(1, 0x100000000 // wal_segment_size)


def walfile_timeline(name: str) -> int:
    """The timeline of a WAL file name (its first 8 hex digits); WalFileNameError if not one."""
    match = _WAL_NAME.match(name)
    if match is None:
        raise WalFileNameError(f"{name!r} is not a WAL segment file name")
    return int(match.group(1), 16)


def walfile_segno(name: str, wal_segment_size: int) -> int:
    """The segment number of a WAL file name: log * (2^32 / segment size) + seg.

    Raises WalFileNameError for anything else (``.history`` files, junk, a seg beyond the range).
    """
    match = _WAL_NAME.match(name)
    if match is None:
        raise WalFileNameError(f"{name!r} is not a WAL segment file name")
    per_id = _segments_per_xlogid(wal_segment_size)
    log, seg = int(match.group(2), 16), int(match.group(3), 16)
    if seg >= per_id:
        raise WalFileNameError(f"{name!r}: segment {seg:X} is out of range for this segment size")
    return log * per_id + seg


def lsn_segno(lsn: int, wal_segment_size: int) -> int:
    """The segment number holding ``lsn``."""
    _segments_per_xlogid(wal_segment_size)
    return lsn // wal_segment_size


def segments_behind(
    current_lsn: int | None, last_archived_wal: str | None, wal_segment_size: int | None
) -> int | None:
    """Complete segments written but not archived yet (None when it cannot be known)."""
    if current_lsn is None or not last_archived_wal or not wal_segment_size:
        return None
    try:
        archived = walfile_segno(last_archived_wal, wal_segment_size)
        current = lsn_segno(current_lsn, wal_segment_size)
    except WalFileNameError:
        return None
    # The segment being written is not complete yet, so it is not "behind".
    return max(0, current - archived - 1)


# --- lag per stage ---------------------------------------------------------------------------


def lag_bytes(reference: int | None, lsn: int | None) -> int | None:
    """Bytes from ``lsn`` up to ``reference``; None when unknown (startup senders report 0)."""
    if reference is None or lsn is None or lsn <= 0:
        return None
    return max(0, reference - lsn)


def with_lag(row: Replication, current_lsn: int | None) -> Replication:
    """A pg_stat_replication row with its sent/write/flush/replay lag in bytes filled in."""
    return row.model_copy(
        update={
            "sent_lag_bytes": lag_bytes(current_lsn, row.sent_lsn),
            "write_lag_bytes": lag_bytes(current_lsn, row.write_lsn),
            "flush_lag_bytes": lag_bytes(current_lsn, row.flush_lsn),
            "replay_lag_bytes": lag_bytes(current_lsn, row.replay_lsn),
        }
    )


def wal_position(
    in_recovery: bool | None, current: int | None, replay: int | None, receive: int | None
) -> int | None:
    """A node's own WAL position: current on a primary, replayed (else received) on a standby."""
    if in_recovery:
        return replay if replay is not None else receive
    return current


def reference_lsn(node: NodeSnapshot) -> int | None:
    """The node's own WAL position (wal_position of its snapshot)."""
    return wal_position(node.in_recovery, node.current_lsn, node.replay_lsn, node.receive_lsn)


def shared_memory_on_hugepages(h: HugePages | None) -> bool | None:
    """Whether PostgreSQL's shared memory sits in HugePages: its own word on 17, else inferred.

    Before PostgreSQL 17 there is no status: with huge_pages on or try, pages in use or reserved
    (shared memory reserves them at start) covering shared_memory_size_in_huge_pages say yes.
    """
    if h is None:
        return None
    if h.status in ("on", "off"):
        return h.status == "on"
    if h.setting == "off" or h.total == 0:
        return False
    if h.total is None or h.free is None or h.setting not in ("on", "try"):
        return None
    taken = h.total - h.free + (h.reserved or 0)
    if h.shared_memory_pages is not None and h.shared_memory_pages > 0:
        return taken >= h.shared_memory_pages
    return taken > 0 if h.setting == "try" else True


def walsender_for(snapshot: ClusterSnapshot, member: str) -> Replication | None:
    """The walsender row streaming to ``member`` (by application_name), on any reachable node."""
    for node in snapshot.nodes:
        if node.reachable:
            for row in node.replication:
                if row.application_name == member:
                    return row
    return None


# A standby replies at least every wal_receiver_status_interval (10 s by default), and at once
# when the walsender asks (half of wal_sender_timeout).
REPLY_ON_TIME_S = 10
# Past two of those without a reply the standby has stopped answering (frozen, hung, cut off):
# the walsender's row is what it last heard, and a NULL time no longer means "caught up".
REPLY_SILENT_S = 2 * REPLY_ON_TIME_S


def standby_silent(sender: Replication, now: datetime) -> bool:
    """Has the standby gone without a reply past REPLY_SILENT_S? (No reply_time before PG 12: no.)"""
    return (age_s(now, sender.reply_time) or 0.0) > REPLY_SILENT_S


def stage_lag_seconds(sender: Replication, now: datetime) -> tuple[float | None, float | None, float | None]:
    """A standby's write, flush and replay lag in seconds; 0 for a stage holding all WAL, not unknown."""
    # PostgreSQL shows each stage's time NULL once the standby has caught up and no WAL comes
    # (the times are measured on WAL that arrives): on a quiet cluster "-" against every
    # replica read as "not measured" beside a lag of 0 B. Bytes behind with no time: unknown.
    # A standby frozen in a failure test kept "0" in the overview's Lag t for the whole
    # wal_sender_timeout (a minute), beside its DOWN and its unknown lag in bytes.
    streaming = sender.state == "streaming" and not standby_silent(sender, now)
    stages = (
        (sender.write_lag_s, sender.write_lag_bytes),
        (sender.flush_lag_s, sender.flush_lag_bytes),
        (sender.replay_lag_s, sender.replay_lag_bytes),
    )
    write, flush, replay = (0.0 if t is None and b == 0 and streaming else t for t, b in stages)
    return write, flush, replay


def replay_lag_seconds(sender: Replication, now: datetime) -> float | None:
    """A standby's replay lag in seconds; 0 when it has replayed all WAL, not unknown."""
    return stage_lag_seconds(sender, now)[2]


def standby_lag_bytes(node: NodeSnapshot) -> int | None:
    """Received but not yet replayed bytes on a standby."""
    if not node.in_recovery:
        return None
    return lag_bytes(node.receive_lsn, node.replay_lsn)


# --- COPY --------------------------------------------------------------------------------------


class CopyEstimate(Frozen):
    """How far a COPY is: percent done and the total it is measured against."""

    percent: float | None = None
    estimated_total_bytes: int | None = None


def copy_estimate(row: CopyProgress) -> CopyEstimate:
    """Percent done from bytes_total, else from the table's tuple count, else from its size.

    bytes_total is 0 for COPY TO/FROM a pipe (a tablesync, ``\\copy``): then the relation's
    reltuples (or its size on disk) is the best guess at the end.
    """
    done = row.bytes_processed
    if row.bytes_total and done is not None:
        percent = min(100.0, 100.0 * done / row.bytes_total)
        return CopyEstimate(percent=percent, estimated_total_bytes=row.bytes_total)
    tuples = row.tuples_processed
    if row.relation_tuples and row.relation_tuples > 0 and tuples is not None:
        fraction = min(1.0, tuples / row.relation_tuples)
        total = int(done / fraction) if done and fraction > 0 else None
        return CopyEstimate(percent=100.0 * fraction, estimated_total_bytes=total)
    if row.relation_size_bytes and done is not None:
        return CopyEstimate(
            percent=min(100.0, 100.0 * done / row.relation_size_bytes),
            estimated_total_bytes=row.relation_size_bytes,
        )
    return CopyEstimate()


# --- rates between consecutive snapshots --------------------------------------------------------


def rate(before: float | None, after: float | None, t0: datetime | None, t1: datetime | None) -> float | None:
    """Change per second of a counter; None when unknown, time did not move or it was reset."""
    if before is None or after is None or t0 is None or t1 is None:
        return None
    seconds = (t1 - t0).total_seconds()
    if seconds <= 0 or after < before:
        return None
    return (after - before) / seconds


def _times(
    prev: ClusterSnapshot, cur: ClusterSnapshot, a: NodeSnapshot, b: NodeSnapshot
) -> tuple[datetime | None, datetime | None]:
    # A node's own last_ok_at is when its numbers were read; fall back to the snapshot time.
    if a.error or b.error:
        return None, None
    return a.last_ok_at or prev.taken_at, b.last_ok_at or cur.taken_at


def _pairs(prev: ClusterSnapshot, cur: ClusterSnapshot) -> list[tuple[NodeSnapshot, NodeSnapshot]]:
    before = {n.name: n for n in prev.nodes}
    return [(before[n.name], n) for n in cur.nodes if n.name in before]


class NodeRates(Frozen):
    """Per-second rates of one node between two snapshots."""

    wal_bytes_s: float | None = None
    replay_bytes_s: float | None = None
    receive_bytes_s: float | None = None
    archived_segments_s: float | None = None
    archive_failures_s: float | None = None
    ready_growth_s: float | None = None


def _signed_rate(
    before: float | None, after: float | None, t0: datetime | None, t1: datetime | None
) -> float | None:
    if before is None or after is None or t0 is None or t1 is None:
        return None
    seconds = (t1 - t0).total_seconds()
    return None if seconds <= 0 else (after - before) / seconds


def node_rates(prev: ClusterSnapshot, cur: ClusterSnapshot) -> dict[str, NodeRates]:
    """WAL, replay and archiver rates per node name (archiver queue growth may be negative)."""
    out: dict[str, NodeRates] = {}
    for a, b in _pairs(prev, cur):
        t0, t1 = _times(prev, cur, a, b)
        same_role = a.in_recovery == b.in_recovery
        arch_a, arch_b = a.archiver, b.archiver
        out[b.name] = NodeRates(
            wal_bytes_s=rate(a.current_lsn, b.current_lsn, t0, t1) if same_role else None,
            replay_bytes_s=rate(a.replay_lsn, b.replay_lsn, t0, t1) if same_role else None,
            receive_bytes_s=rate(a.receive_lsn, b.receive_lsn, t0, t1) if same_role else None,
            archived_segments_s=rate(
                arch_a.archived_count if arch_a else None,
                arch_b.archived_count if arch_b else None,
                t0,
                t1,
            ),
            archive_failures_s=rate(
                arch_a.failed_count if arch_a else None,
                arch_b.failed_count if arch_b else None,
                t0,
                t1,
            ),
            ready_growth_s=_signed_rate(
                arch_a.ready_count if arch_a else None,
                arch_b.ready_count if arch_b else None,
                t0,
                t1,
            ),
        )
    return out


class SlotRates(Frozen):
    """Per-second rates of one slot's decoding statistics."""

    spill_bytes_s: float | None = None
    stream_bytes_s: float | None = None
    total_bytes_s: float | None = None
    confirmed_bytes_s: float | None = None


def slot_rates(prev: ClusterSnapshot, cur: ClusterSnapshot) -> dict[tuple[str, str], SlotRates]:
    """Spill/stream/total decoding bytes per second, keyed by (node, slot)."""
    out: dict[tuple[str, str], SlotRates] = {}
    for a, b in _pairs(prev, cur):
        t0, t1 = _times(prev, cur, a, b)
        before = {s.slot_name: s for s in a.slots}
        for slot in b.slots:
            old = before.get(slot.slot_name)
            if old is None:
                continue
            out[(b.name, slot.slot_name)] = SlotRates(
                spill_bytes_s=rate(old.spill_bytes, slot.spill_bytes, t0, t1),
                stream_bytes_s=rate(old.stream_bytes, slot.stream_bytes, t0, t1),
                total_bytes_s=rate(old.total_bytes, slot.total_bytes, t0, t1),
                confirmed_bytes_s=rate(old.confirmed_flush_lsn, slot.confirmed_flush_lsn, t0, t1),
            )
    return out


class CopyRate(Frozen):
    """Throughput of one COPY and when it should finish."""

    bytes_s: float | None = None
    tuples_s: float | None = None
    eta_s: float | None = None


def copy_total(row: CopyProgress) -> int | None:
    """The bytes a COPY will have read: bytes_total when known, else the estimate, else None."""
    return row.bytes_total or row.estimated_total_bytes or None


class MaintenanceRate(Frozen):
    """A maintenance operation's speed in its phase's unit per second, and the ETA of that phase."""

    per_s: float | None = None
    eta_s: float | None = None


def maintenance_rates(prev: ClusterSnapshot, cur: ClusterSnapshot) -> dict[tuple[str, int], MaintenanceRate]:
    """Per (node, pid): the speed of the phase both snapshots saw, and when it ends at that speed."""
    out: dict[tuple[str, int], MaintenanceRate] = {}
    for a, b in _pairs(prev, cur):
        t0, t1 = _times(prev, cur, a, b)
        before = {m.pid: m for m in a.maintenance}
        for row in b.maintenance:
            old = before.get(row.pid)
            if old is None or (old.phase, old.unit, old.relation) != (row.phase, row.unit, row.relation):
                continue
            speed = rate(old.done, row.done, t0, t1)
            eta = None
            if speed and row.total is not None and row.done is not None:
                eta = max(0.0, (row.total - row.done) / speed)
            out[(b.name, row.pid)] = MaintenanceRate(per_s=speed, eta_s=eta)
    return out


def copy_rates(prev: ClusterSnapshot, cur: ClusterSnapshot) -> dict[tuple[str, int], CopyRate]:
    """COPY bytes/s, tuples/s and ETA in seconds, keyed by (node, pid)."""
    out: dict[tuple[str, int], CopyRate] = {}
    for a, b in _pairs(prev, cur):
        t0, t1 = _times(prev, cur, a, b)
        before = {c.pid: c for c in a.copy_progress}
        for row in b.copy_progress:
            old = before.get(row.pid)
            if old is None or old.relation != row.relation:
                continue
            speed = rate(old.bytes_processed, row.bytes_processed, t0, t1)
            total = copy_total(row)
            eta = None
            if speed and total is not None and row.bytes_processed is not None:
                eta = max(0.0, (total - row.bytes_processed) / speed)
            out[(b.name, row.pid)] = CopyRate(
                bytes_s=speed,
                tuples_s=rate(old.tuples_processed, row.tuples_processed, t0, t1),
                eta_s=eta,
            )
    return out


# --- slot presence across members --------------------------------------------------------------


class SlotPresence(Frozen):
    """Which permanent slots each member has: True, False, or None when the node was not read."""

    members: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()
    present: dict[str, dict[str, bool | None]] = {}

    def missing(self) -> dict[str, tuple[str, ...]]:
        """Slot name → members known to lack it."""
        return {
            slot: tuple(m for m in self.members if self.present[slot].get(m) is False)
            for slot in self.slots
            if any(self.present[slot].get(m) is False for m in self.members)
        }


def permanent_slot_names(snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """Patroni's permanent slots (permanent_slots), sorted by name."""
    return tuple(sorted(permanent_slots(snapshot)))


def failover_slots(snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """Logical slots PostgreSQL itself keeps on its standbys (``failover = true``, 17+), sorted."""
    return tuple(sorted({s.slot_name for n in snapshot.nodes if n.reachable for s in n.slots if s.failover}))


def slot_keepers(snapshot: ClusterSnapshot) -> dict[str, str]:
    """Each slot kept across a failover, by name: "Patroni", "PostgreSQL" (its failover) or "both"."""
    patroni = permanent_slots(snapshot)
    out = dict.fromkeys(patroni, "Patroni")
    for name in failover_slots(snapshot):
        out[name] = "both" if name in patroni else "PostgreSQL"
    return dict(sorted(out.items()))


def slot_presence(snapshot: ClusterSnapshot, slots: tuple[str, ...] | None = None) -> SlotPresence:
    """The matrix of slots kept across a failover (default: slot_keepers) on every member.

    Members are member_names: Patroni's members and any node Patroni did not list, sorted.
    """
    names = tuple(slot_keepers(snapshot)) if slots is None else slots
    members = tuple(member_names(snapshot))
    nodes = {n.name: n for n in snapshot.nodes}
    present: dict[str, dict[str, bool | None]] = {}
    for slot in names:
        row: dict[str, bool | None] = {}
        for member in members:
            node = nodes.get(member)
            if node is None or node.error or not node.reachable:
                row[member] = None
            else:
                row[member] = any(s.slot_name == slot for s in node.slots)
        present[slot] = row
    return SlotPresence(members=members, slots=names, present=present)


# --- poolers: rates between two reads of one pooler ----------------------------------------------


class BouncerRates(Frozen):
    """A database's SHOW STATS as per-second rates between two reads."""

    xacts_s: float | None = None
    queries_s: float | None = None
    received_s: float | None = None
    sent_s: float | None = None
    wait_ms_per_xact: float | None = None  # average client wait for a server per transaction


def bouncer_rates(prev: PgBouncerState | None, cur: PgBouncerState) -> dict[str, BouncerRates]:
    """Per-database rates of one pgBouncer between two reads (empty without two good reads)."""
    if prev is None or not (prev.ok and cur.ok):
        return {}
    t0, t1 = prev.last_ok_at, cur.last_ok_at
    before = {s.database: s for s in prev.stats}
    out: dict[str, BouncerRates] = {}
    for s in cur.stats:
        old = before.get(s.database)
        if old is None:
            continue
        xacts = None if old.xacts is None or s.xacts is None else s.xacts - old.xacts
        waited = None if old.wait_us is None or s.wait_us is None else s.wait_us - old.wait_us
        per_xact = None
        if xacts is not None and xacts > 0 and waited is not None and waited >= 0:
            per_xact = waited / xacts / 1000
        out[s.database] = BouncerRates(
            xacts_s=rate(old.xacts, s.xacts, t0, t1),
            queries_s=rate(old.queries, s.queries, t0, t1),
            received_s=rate(old.received_bytes, s.received_bytes, t0, t1),
            sent_s=rate(old.sent_bytes, s.sent_bytes, t0, t1),
            wait_ms_per_xact=per_xact,
        )
    return out


def select_rates(prev: PgpoolState | None, cur: PgpoolState) -> dict[int, float | None]:
    """SELECTs per second pgpool-II sent to each node between two reads."""
    if prev is None or not (prev.ok and cur.ok):
        return {}
    before = {n.node_id: n for n in prev.nodes}
    return {
        n.node_id: rate(before[n.node_id].select_cnt, n.select_cnt, prev.last_ok_at, cur.last_ok_at)
        for n in cur.nodes
        if n.node_id in before
    }


def age_s(now: datetime, then: datetime | None) -> float | None:
    """Seconds from ``then`` to ``now`` (never negative), None when unknown."""
    if then is None:
        return None
    return max(0.0, (now - then).total_seconds())


def member_names(snapshot: ClusterSnapshot) -> list[str]:
    """Every member or node name in the snapshot, sorted: Patroni's, and nodes Patroni did not list."""
    names = [m.name for m in snapshot.members]
    names += [n.name for n in snapshot.nodes if n.name not in names]
    return sorted(names)


def permanent_slots(snapshot: ClusterSnapshot, *, logical_only: bool = False) -> dict[str, str]:
    """Patroni's permanent slots (from /config) by name, each 'logical' or 'physical'."""
    config = snapshot.patroni_config
    if config is None:
        return {}
    out: dict[str, str] = {}
    for name, spec in config.permanent_slots.items():
        spec = spec if isinstance(spec, dict) else {}
        logical = spec.get("type") == "logical" or ("database" in spec and "plugin" in spec)
        if logical or not logical_only:
            out[name] = "logical" if logical else "physical"
    return out


def listed_processes(n: NodeSnapshot) -> int:
    """The processes a node's read accounts for: listed (the postmaster aside), or counted as idle."""
    return sum(1 for p in n.processes if p.backend_type != "postmaster") + (n.idle_sessions or 0)
