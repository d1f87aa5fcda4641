"""Slots pane: each member's slots, retained WAL, decoding rates; permanent slot presence."""

from __future__ import annotations

from pgtop_ha.judge.rules import SLOTS_PERMANENT_MISSING, WAL_DISK
from pgtop_ha.judge.view import (
    Judgement,
    failover_copy_ready,
    top_retainer,
    wal_disk_bound,
)
from pgtop_ha.models.derive import SlotRates, slot_keepers, slot_presence, slot_rates
from pgtop_ha.models.snapshot import ClusterSnapshot, Slot, WalDisk
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import count, fit_name, human_bytes, rate
from pgtop_ha.ui.panes.base import (
    NAME_WIDTH,
    Cell,
    Column,
    Context,
    PaneSpec,
    Row,
    Table,
    cell,
    marked,
    more_row,
    name_column,
    num,
    same_row,
    sortable,
    state,
    worst_state,
)

COLUMNS = (
    name_column("node", "Member"),
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


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per slot on every reachable member."""
    out = []
    rates = {} if ctx.previous is None else slot_rates(ctx.previous, snapshot)
    judged = ctx.judged(snapshot)
    for node in sorted(snapshot.nodes, key=lambda n: n.name):
        if not node.reachable:
            continue
        for slot in node.slots:
            found = judged.slot(slot)
            out.append(_slot_row(node.name, slot, found, rates.get((node.name, slot.slot_name), _NO_RATES)))
        out.extend(more_row(COLUMNS, node.name, len(node.slots), node.slots_total, "more slots"))
        if node.wal_disk is not None:
            level = judged.wal_disk(node.wal_disk)
            out.append(_wal_row(node.name, node.wal_disk, top_retainer(node), level))
    return out


_NO_RATES = SlotRates()


def _slot_row(node: str, slot: Slot, found: tuple[Mark, ...], rates: SlotRates) -> Row:
    """The row of one slot, built from its model, its marks and its decoding rates."""
    active, retained = slot.active, slot.retained_bytes
    cells = {
        "node": cell(node),
        "slot": cell(slot.slot_name),
        "health": worst_state(found),
        "type": cell(slot.slot_type or "?"),
        "active": cell("yes" if active else "no" if active is False else "?"),
        "retained": marked(human_bytes(retained), found, "retained", sortable(retained), ok=True),
        "wal_status": marked(slot.wal_status or "-", found, "wal_status"),
        "safe": num(human_bytes(slot.safe_wal_size, signed=True), slot.safe_wal_size),
        "spill": num(rate(rates.spill_bytes_s), rates.spill_bytes_s),
        "stream": num(rate(rates.stream_bytes_s), rates.stream_bytes_s),
    }
    return same_row(f"{node}|{slot.slot_name}", cells, node)


def _wal_row(node: str, w: WalDisk, retainer: Slot | None, level: Level) -> Row:
    """pg_wal on disk below the node's slots: its size, its bound, and the slot that keeps most."""
    bound = wal_disk_bound(w)
    cells = {
        "node": cell(node),
        "slot": cell("(pg_wal)"),
        "health": state(level, WAL_DISK.id),
        "type": cell("on disk"),
        "active": cell(f"{count(w.files)} files"),
        "retained": num(human_bytes(w.bytes), w.bytes, level, WAL_DISK.id),
        "wal_status": cell(f"of {human_bytes(bound)}"),
        "safe": num("", None),
        "spill": cell("most kept by" if retainer else ""),
        "stream": cell(retainer.slot_name if retainer else ""),
    }
    return same_row(f"{node}|(pg_wal)", cells, node)


def _member_keys(members: tuple[str, ...]) -> list[tuple[str, str]]:
    """(member, column key) per member; a member called "slot" gets a distinct key."""
    out = []
    taken = {"slot", "kept"}
    for name in members:
        key = name
        while key in taken:  # a table's column keys must be unique
            key += "#"
        taken.add(key)
        out.append((name, key))
    return out


def matrix_columns(snapshot: ClusterSnapshot) -> tuple[Column, ...]:
    """The presence matrix's columns: the slot, then one per member."""
    members = slot_presence(snapshot, ()).members
    return (
        Column("slot", "Kept slot"),
        Column("kept", "Kept by"),
        *(Column(key, fit_name(name, members, NAME_WIDTH)) for name, key in _member_keys(members)),
    )


def matrix_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """For each slot kept across a failover (Patroni's, PostgreSQL's own), whether each member has it."""
    matrix = slot_presence(snapshot)
    keepers = slot_keepers(snapshot)
    keys = _member_keys(matrix.members)
    judged = ctx.judged(snapshot)
    out = []
    for slot_name in matrix.slots:
        cells: dict[str, Cell] = {"slot": cell(slot_name), "kept": cell(keepers.get(slot_name, "?"))}
        for name, key in keys:
            present = matrix.present[slot_name].get(name)
            if present is None:
                cells[key] = cell("?")
            elif present:
                cells[key] = _present(judged, name, slot_name, keepers.get(slot_name))
            else:
                cells[key] = cell("✖ no", judged.absent_slot(name), rule=SLOTS_PERMANENT_MISSING.id)
        out.append(same_row(slot_name, cells))
    return out


def _present(judged: Judgement, member: str, slot_name: str, keeper: str | None) -> Cell:
    """A member's copy of a kept slot; a standby's failover copy says whether it would survive."""
    node = judged.snapshot.node(member)
    slot = None if node is None else next((s for s in node.slots if s.slot_name == slot_name), None)
    if slot is None or node is None or not node.in_recovery or keeper == "Patroni":
        return cell("✔ yes", Level.OK)
    if failover_copy_ready(slot):
        return cell("✔ synced", Level.OK)
    # Its own (not synced: never updated) or a temporary copy (dropped at promotion).
    text = "✖ stale" if not slot.synced else "… syncing"
    return cell(text, judged.absent_slot(None), rule=SLOTS_PERMANENT_MISSING.id)


MATRIX = Table("slots-matrix", (), matrix_rows, dynamic_columns=matrix_columns)
PANE = PaneSpec(
    id="slots",
    title="Slots",
    key="4",
    columns=COLUMNS,
    rows=rows,
    per_member=True,
    help="slots, retained WAL, decoding rates, permanent slots",
    more=(MATRIX,),
)
