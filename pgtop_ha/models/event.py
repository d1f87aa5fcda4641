"""An event: one change seen between two snapshots, a marker, or an action."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen

# Where an event comes from: which source saw it, or who made it.
SOURCES = ("patroni", "postgres", "haproxy", "console", "marker", "action")


class Event(Frozen):
    """One change seen between two snapshots, a marker, or an action (sent or done)."""

    at: datetime  # when it was observed (the snapshot's taken_at), or when it happened
    kind: str
    node: str | None = None
    text: str
    severity: int = 0  # 0 info, 1 warn, 2 crit: same scale as health.Level
    source: str = "console"  # one of SOURCES
    id: int = 0  # given by the Timeline; an update of an event keeps its id
    ended_at: datetime | None = None  # when the state it reports ended (flipped back or changed)
    duration_s: float | None = None  # how long that state lasted
    count: int = 1  # times the state came back within the debounce window (flapping)
