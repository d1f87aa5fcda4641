"""Events pane: what changed between snapshots (role, reachability, HAProxy), newest first."""

from __future__ import annotations

from pgtop_ha.models.health import Level
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, dedupe

COLUMNS = (
    Column("time", "Time"),
    Column("level", "Level"),
    Column("node", "Node"),
    Column("kind", "Kind"),
    Column("text", "What changed"),
)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The recorded events, newest first; times in the local time zone."""
    out = []
    for ev in reversed(ctx.events):
        level = Level(max(0, min(2, ev.severity)))
        when = ev.at.astimezone()
        out.append(
            Row(
                key=f"{ev.at.isoformat()}|{ev.node}|{ev.kind}|{ev.text}",
                node=ev.node,
                cells=(
                    cell(when.strftime("%H:%M:%S"), sort=ev.at.timestamp()),
                    cell(level.word if level else "· info", level if level else None, float(level)),
                    cell(ev.node or "-"),
                    cell(ev.kind),
                    cell(ev.text, level if level else None),
                ),
            )
        )
    return dedupe(out)


PANE = PaneSpec("events", "Events", "8", COLUMNS, rows, sort="time", reverse=True)
