"""Events pane: the incident timeline (changes, checks, the failover stopwatch, markers, actions),
newest first; a state that flipped back shows how long it lasted, in a column of its own."""

from __future__ import annotations

from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import shown
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, SameInputs, cell, dedupe, name_column

COLUMNS = (
    Column("time", "Time"),
    Column("level", "Level"),
    name_column("node", "Node"),
    # Before the text: a narrow pane cuts the text, never how long the state lasted.
    Column("lasted", "For", right=True),
    Column("text", "What changed"),
    Column("kind", "Kind"),  # last: the text says it too, and a narrow pane needs the room
)


def span(ev: Event) -> str:
    """How long the reported state lasted: '4.2 s', or the flap count and span; '' while it lasts."""
    if ev.count > 1:
        return (
            f"×{ev.count} in {ev.duration_s:.1f} s" if ev.duration_s is not None else f"×{ev.count}, flapping"
        )
    if ev.duration_s is not None:
        # A source slow by a few ms past its budget read "for 0.0 s": it did last, briefly.
        return "<0.1 s" if ev.duration_s < 0.05 else f"{ev.duration_s:.1f} s"
    return ""


def lasted(ev: Event) -> str:
    """How long the reported state lasted, as a suffix: ' — for 4.2 s', or the flap count and span."""
    text = span(ev)
    if not text:
        return ""
    return f" — {text}" if ev.count > 1 else f" — for {text}"


# Each event's row, kept while the event is the very object the timeline holds (an update in
# place, a flip back or the stopwatch, makes a new one): after an incident the timeline keeps
# hundreds, and building all their rows again each second is dear for a list that did not change.
_ROWS = SameInputs(limit=1024)


def event_row(ev: Event) -> Row:
    """The row of one event: the same Row while the event is the same object."""
    if not ev.id:
        return _build(ev)  # no id, no key to keep it by (never from the timeline)
    return _ROWS.rows(str(ev.id), (ev,), lambda: [_build(ev)])[0]


def bare_text(ev: Event) -> str:
    """What changed, without the node the Node column names."""
    # "node1: PostgreSQL down" in node1's row said it twice and cost the 80x24 overview a tenth
    # of its text (the event itself keeps its full text).
    return ev.text.removeprefix(f"{ev.node}: ") if ev.node else ev.text


def event_text(ev: Event, width: int) -> str:
    """What changed, with how long it lasted; cut to ``width`` in its text, never in the duration."""
    text = bare_text(ev)
    suffix = lasted(ev)
    # How long a state lasted is what the report after a failure test needs: the text gives way.
    return shown(text, max(1, width - len(suffix))) + suffix


def _build(ev: Event) -> Row:
    level = Level(max(0, min(2, ev.severity)))
    when = ev.at.astimezone()
    # An event updated in place (a flip back, the stopwatch) keeps its id, hence its row.
    key = f"#{ev.id}" if ev.id else f"{ev.at.isoformat()}|{ev.node}|{ev.kind}|{ev.text}"
    return Row(
        key=key,
        node=ev.node,
        cells={
            "time": cell(when.strftime("%H:%M:%S"), sort=ev.at.timestamp()),
            "level": cell(level.word if level else "· info", level if level else None, float(level)),
            "node": cell(shown(ev.node, 64) if ev.node else "-"),
            "lasted": cell(span(ev) or "-", sort=ev.duration_s),
            "text": cell(shown(bare_text(ev)), level if level else None),
            "kind": cell(ev.kind),
        },
    )


# The whole list too, while every event is the same: its keys made unique once, not every second.
_LISTS = SameInputs(limit=1)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """The recorded events, newest first; times in the local time zone."""
    events = tuple(ctx.events)
    return _LISTS.rows("events", events, lambda: dedupe([event_row(ev) for ev in reversed(events)]))


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
