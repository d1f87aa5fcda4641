"""Events pane: the incident timeline (changes, checks, the failover stopwatch, markers, actions),
newest first; a state that flipped back shows how long it lasted."""

from __future__ import annotations

from pgtop_ha.models.events import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, dedupe

COLUMNS = (
    Column("time", "Time"),
    Column("level", "Level"),
    Column("node", "Node"),
    Column("kind", "Kind"),
    Column("text", "What changed"),
)


def lasted(ev: Event) -> str:
    """How long the reported state lasted, as a suffix: ' — for 4.2 s', or the flap count and span."""
    if ev.count > 1:
        span = f" in {ev.duration_s:.1f} s" if ev.duration_s is not None else ", still flapping"
        return f" — ×{ev.count}{span}"
    if ev.duration_s is not None:
        return f" — for {ev.duration_s:.1f} s"
    return ""


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The recorded events, newest first; times in the local time zone."""
    out = []
    for ev in reversed(ctx.events):
        level = Level(max(0, min(2, ev.severity)))
        when = ev.at.astimezone()
        # An event updated in place (a flip back, the stopwatch) keeps its id, hence its row.
        key = f"#{ev.id}" if ev.id else f"{ev.at.isoformat()}|{ev.node}|{ev.kind}|{ev.text}"
        # The Node column names it: "node1: PostgreSQL down" in node1's row said it twice and
        # cost the 80x24 overview a tenth of its text (the event itself keeps its full text).
        text = ev.text.removeprefix(f"{ev.node}: ") if ev.node else ev.text
        out.append(
            Row(
                key=key,
                node=ev.node,
                cells={
                    "time": cell(when.strftime("%H:%M:%S"), sort=ev.at.timestamp()),
                    "level": cell(level.word if level else "· info", level if level else None, float(level)),
                    "node": cell(shown(ev.node, 64) if ev.node else "-"),
                    "kind": cell(ev.kind),
                    "text": cell(shown(text) + lasted(ev), level if level else None),
                },
            )
        )
    return dedupe(out)


PANE = PaneSpec(
    id="events",
    title="Events",
    key="8",
    columns=COLUMNS,
    rows=rows,
    sort="time",
    reverse=True,
    help="timeline: changes, checks, failovers, markers",
)
