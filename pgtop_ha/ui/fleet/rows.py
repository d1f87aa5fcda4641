"""The fleet screen's table: one row per cluster, its columns, through the console's keyed table."""

from __future__ import annotations

from pgtop_ha.judge.view import FleetRow
from pgtop_ha.ui.format import human_bytes
from pgtop_ha.ui.panes.base import Cell, Column, Row

COLUMNS = (
    Column("cluster", "cluster"),
    Column("leader", "leader"),
    Column("up", "up", right=True),
    Column("streaming", "streaming", right=True),
    Column("lag", "max lag", right=True),
    Column("tl", "TL", right=True),
    Column("tl_moves", "TL Δ1h", right=True),
    Column("restart", "restart", right=True),
    Column("paused", "paused"),
    Column("dcs", "DCS seen", right=True),
    Column("writer", "writer"),
    Column("problems", "problems"),
)


def texts(row: FleetRow) -> tuple[str, ...]:
    """The row's texts, in COLUMNS order."""
    return (
        row.scope,
        row.leader or "NONE",
        f"{row.members_up}/{row.members_total}",
        f"{row.streaming}/{row.replicas}",
        human_bytes(row.max_lag_bytes),
        "-" if row.timeline is None else str(row.timeline),
        str(row.timeline_changes),
        str(row.pending_restart) if row.pending_restart else "",
        "paused" if row.paused else "",
        "-" if row.dcs_age_s is None else f"{row.dcs_age_s:.0f}s",
        "-" if row.writer_up is None else ("1 UP" if row.writer_up == 1 else f"{row.writer_up} UP!"),
        "; ".join(row.said),
    )


def table_row(row: FleetRow) -> Row:
    """A cluster as the keyed table takes it, keyed by its scope."""
    return Row(
        key=row.scope,
        cells={col.key: Cell(text) for col, text in zip(COLUMNS, texts(row), strict=True)},
    )
