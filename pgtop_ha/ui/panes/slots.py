"""Slots pane: each member's slots, retained WAL, decoding rates; permanent slot presence."""

from __future__ import annotations

from pgtop_ha.models.health import Level, is_leader, member_names, retained_level
from pgtop_ha.models.snapshot import ClusterSnapshot, Slot
from pgtop_ha.ui.format import human_bytes, rate, ratio
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, elapsed, num, state

COLUMNS = (
    Column("node", "Member"),
    Column("slot", "Slot"),
    Column("health", "Health"),
    Column("type", "Type"),
    Column("active", "Active"),
    Column("retained", "Retained", right=True),
    Column("wal_status", "WAL status"),
    Column("safe", "Safe size", right=True),
    Column("spill", "Spill", right=True),
    Column("stream", "Stream", right=True),
)


def _rate(snapshot: ClusterSnapshot, ctx: Context, node: str, slot: Slot, attr: str) -> float | None:
    prev = ctx.previous
    value = getattr(slot, attr)
    dt = elapsed(snapshot, prev)
    if prev is None or not isinstance(value, int) or dt is None:
        return None
    pnode = prev.node(node)
    old = None if pnode is None else next((s for s in pnode.slots if s.slot_name == slot.slot_name), None)
    before = None if old is None else getattr(old, attr)
    if not isinstance(before, int) or value < before:
        # A counter reset (pg_stat_reset_replication_slot) shows as a drop: no rate that cycle.
        return None
    return ratio(value - before, dt)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per slot on every reachable member."""
    out = []
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if not node.reachable:
            continue
        for slot in node.slots:
            level = retained_level(ctx.thresholds, slot.retained_bytes)
            if slot.wal_status == "lost" or slot.conflicting:
                level = Level.CRIT
            elif slot.wal_status == "unreserved":
                level = max(level, Level.WARN)
            spill = _rate(snapshot, ctx, node.name, slot, "spill_bytes")
            stream = _rate(snapshot, ctx, node.name, slot, "stream_bytes")
            out.append(
                Row(
                    key=f"{node.name}|{slot.slot_name}",
                    node=node.name,
                    cells=(
                        cell(node.name),
                        cell(slot.slot_name),
                        state(level),
                        cell(slot.slot_type or "?"),
                        cell("yes" if slot.active else "no" if slot.active is False else "?"),
                        num(
                            human_bytes(slot.retained_bytes),
                            slot.retained_bytes,
                            retained_level(ctx.thresholds, slot.retained_bytes),
                        ),
                        cell(
                            slot.wal_status or "-",
                            Level.CRIT if slot.wal_status == "lost" else None,
                        ),
                        num(human_bytes(slot.safe_wal_size, signed=True), slot.safe_wal_size),
                        num(rate(spill), spill),
                        num(rate(stream), stream),
                    ),
                )
            )
    return out


def matrix_columns(snapshot: ClusterSnapshot) -> tuple[Column, ...]:
    """The presence matrix's columns: the slot, then one per member."""
    columns = [Column("slot", "Permanent slot")]
    taken = {"slot"}
    for name in member_names(snapshot):
        key = name
        while key in taken:  # a member called "slot": a table's column keys must be unique
            key += "#"
        taken.add(key)
        columns.append(Column(key, name))
    return tuple(columns)


def matrix_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """For each of Patroni's permanent slots, whether each member has it."""
    cfg = snapshot.patroni_config
    if cfg is None:
        return []
    out = []
    names = member_names(snapshot)
    for slot_name in sorted(cfg.permanent_slots):
        cells = [cell(slot_name)]
        for name in names:
            node = snapshot.node(name)
            if node is None or not node.reachable:
                cells.append(cell("?"))
                continue
            present = any(s.slot_name == slot_name for s in node.slots)
            if present:
                cells.append(cell("✔ yes", Level.OK))
            else:
                leader = is_leader(snapshot.member(name))
                cells.append(cell("✖ no", Level.CRIT if leader else Level.WARN))
        out.append(Row(key=slot_name, cells=tuple(cells)))
    return out


PANE = PaneSpec("slots", "Slots", "4", COLUMNS, rows)
MATRIX = PaneSpec("slots-matrix", "Permanent slots", "4", (), matrix_rows, dynamic_columns=matrix_columns)
