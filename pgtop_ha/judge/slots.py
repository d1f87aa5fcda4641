"""Replication slots graded: retained WAL, wal_status, and the permanent slots Patroni keeps."""

from __future__ import annotations

from pgtop_ha.judge.rules import SLOTS_RETAINED
from pgtop_ha.models.derive import failover_slots, permanent_slots
from pgtop_ha.models.leader import pg_primary
from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot, Slot
from pgtop_ha.models.sources import node_state
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.models.verdict import Mark


def retained_level(t: Thresholds, retained: int | None) -> Level:
    """A slot's retained WAL graded."""
    return t.slot_retained_bytes.grade(retained)


def top_retainer(n: NodeSnapshot) -> Slot | None:
    """The slot on this node that retains the most WAL (None without one retaining any)."""
    return max((s for s in n.slots if s.retained_bytes), key=lambda s: s.retained_bytes or 0, default=None)


def _slug(name: str) -> str:
    """A member's replication slot name as Patroni derives it from the member name."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name.lower())


def slot_marks(t: Thresholds, slot: Slot) -> tuple[Mark, ...]:
    """A slot's rules by the column each colours: retained WAL, wal_status, a conflict (slots.retained)."""
    out = []
    if (lv := retained_level(t, slot.retained_bytes)) > Level.OK:
        out.append(Mark(SLOTS_RETAINED.id, lv, "retained WAL", "retained"))
    if slot.wal_status == "lost":
        out.append(Mark(SLOTS_RETAINED.id, Level.CRIT, "its WAL is lost", "wal_status"))
    elif slot.wal_status == "unreserved":
        out.append(Mark(SLOTS_RETAINED.id, Level.WARN, "past max_slot_wal_keep_size", "wal_status"))
    if slot.conflicting:
        out.append(Mark(SLOTS_RETAINED.id, Level.CRIT, "conflicting: invalidated on the standby"))
    return tuple(out)


def slot_level(t: Thresholds, slot: Slot) -> Level:
    """A slot's grade: the worst of its marks."""
    return max((m.level for m in slot_marks(t, slot)), default=Level.OK)


def absent_slot_level(on_leader: bool) -> Level:
    """A permanent slot missing: CRIT on the leader (its consumer breaks), WARN on a replica."""
    return Level.CRIT if on_leader else Level.WARN


def worst_slot(snapshot: ClusterSnapshot, t: Thresholds) -> tuple[str, Slot, Level] | None:
    """(node, slot, level) of the worst slot on a reachable node: graded, wal_status, bytes, the primary's."""
    # Patroni keeps copies of a permanent slot on each member, often with the same retained
    # bytes: the leader's "extended" (past max_wal_size) lost to a standby's "reserved" by name,
    # and on a full tie the overview named a replica's copy ("lab_sub on node3") where the slot
    # its consumer reads is the primary's.
    found = [
        (
            slot_level(t, s),
            wal_status_rank(s.wal_status),
            s.retained_bytes or 0,
            pg_primary(n) is True,
            n.name,
            s,
        )
        for n in snapshot.nodes
        if n.reachable
        for s in n.slots
    ]
    if not found:
        return None
    level, _, _, _, node, slot = max(found, key=lambda f: (*f[:5], f[5].slot_name))
    return node, slot, level


_WAL_STATUS_RANK = {"reserved": 0, "extended": 1, "unreserved": 2, "lost": 3}


def wal_status_rank(wal_status: str | None) -> int:
    """How near a slot is to losing its WAL (pg_replication_slots.wal_status): 0 reserved … 3 lost."""
    return _WAL_STATUS_RANK.get(wal_status or "", 0)


def failover_copy_ready(slot: Slot) -> bool:
    """A standby's copy of a failover slot survives its promotion: synced and persisted."""
    return bool(slot.synced) and slot.temporary is not True


def missing_permanent_slots(snapshot: ClusterSnapshot, name: str) -> list[str]:
    """Permanent slots Patroni should keep on this member but PostgreSQL does not list (sorted).

    Logical ones are expected on every member (Patroni copies them to replicas), physical ones
    on the primary only, and never a member's own slot on itself. Unknown data: none missing.
    """
    n = snapshot.node(name)
    if n is None or node_state(n) in ("unreachable", "pending") or n.in_recovery is None:
        return []
    if "slots" in n.unavailable:
        return []
    have = {s.slot_name for s in n.slots}
    # A failover slot (17+) that a standby lacks is lost if that standby is promoted, and so is one
    # it holds but does not sync (its own, left from when it was primary: never updated) or has
    # not persisted yet (a temporary synced copy is dropped at promotion).
    ready = {s.slot_name for s in n.slots if not n.in_recovery or failover_copy_ready(s)}
    patroni = permanent_slots(snapshot)
    out = [slot for slot in failover_slots(snapshot) if slot not in ready and slot not in patroni]
    for slot, kind in patroni.items():
        if slot == _slug(name) or slot in have:
            continue
        if kind == "physical" and n.in_recovery:
            continue
        out.append(slot)
    return sorted(out)
