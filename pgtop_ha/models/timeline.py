"""The incident timeline: events folded from consecutive snapshots, markers and actions. Pure.

INTERFACE STUB (the lead wrote it so the recorder and the UI can be built against it; the
timeline helper fills in debounce, durations, disagreement checks and the failover stopwatch).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.events import Event, diff
from pgtop_ha.models.snapshot import ClusterSnapshot


class FailoverReport(Frozen):
    """The stopwatch of one leader loss: what a failure-test report needs, in seconds and bytes."""

    lost_at: datetime
    old_leader: str | None = None
    new_leader: str | None = None
    elected_at: datetime | None = None
    election_s: float | None = None
    write_outage_from: datetime | None = None
    write_outage_to: datetime | None = None
    write_outage_s: float | None = None
    lag_at_promotion_bytes: int | None = None
    replicas_streaming_at: datetime | None = None
    replicas_streaming_s: float | None = None
    permanent_slots_ok: bool | None = None
    done: bool = False


class Timeline:
    """Folds snapshots into events in observed order; markers and actions join the same list."""

    def __init__(self, debounce_s: float = 5.0) -> None:
        self.debounce_s = debounce_s
        self._prev: ClusterSnapshot | None = None
        self._events: list[Event] = []

    def observe(self, snap: ClusterSnapshot) -> list[Event]:
        """Fold one snapshot in; returns the events it added (or updated)."""
        new = list(diff(self._prev, snap))
        self._prev = snap
        self._events.extend(new)
        return new

    def mark(self, at: datetime, text: str, source: str = "marker") -> Event:
        """A marker from the user (key M, `pgtop-ha mark`)."""
        event = Event(at=at, kind="marker", text=text)
        self._events.append(event)
        return event

    def action(self, at: datetime, text: str, phase: Literal["sent", "done"], ok: bool | None = None) -> Event:
        """An operator action: one event when sent, one when done."""
        severity = 0 if ok is not False else 2
        event = Event(at=at, kind="action", text=f"{text} ({phase})", severity=severity)
        self._events.append(event)
        return event

    def events(self) -> list[Event]:
        """Every event so far, in the order observed."""
        return list(self._events)

    def failovers(self) -> list[FailoverReport]:
        """Every leader loss seen so far with its stopwatch figures (the last may be running)."""
        return []
