"""The snapshot pipeline every driver runs: observe, judge, pace, mark and record, in one place.

The console, `serve`, `record`, `check` and `snapshot` each hold one Session; replays and attached
viewers rebuild theirs from what was recorded. A snapshot is folded into the timeline here and
nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Literal, Protocol

from pgtop_ha.engines.stopwatch import past_outages
from pgtop_ha.engines.timeline import Timeline, cadence
from pgtop_ha.judge.judgement import Judgement, judgement
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.sections import Judging
from pgtop_ha.models.snapshot import ClusterSnapshot

JUDGEMENTS_KEPT = 4


class Recording(Protocol):
    """Where a session writes what it observes (record.recorder.Recorder)."""

    error: str | None

    def cycle(self, snapshot: ClusterSnapshot, events: Sequence[Event], scrubbed: str | None = None) -> None:
        """One snapshot and the events as they stand."""
        ...

    def marker(self, at: datetime, text: str, source: str, events: Sequence[Event]) -> None:
        """One marker and the events as they stand."""
        ...

    def sync_events(self, events: Sequence[Event]) -> None:
        """The events as they stand (one came from outside the poll)."""
        ...


class Session:
    """One driver's pipeline: its timeline, the judgement of a snapshot, its cadence and recording."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        judging: Judging | None = None,
        keep: int | None = None,
        recording: Recording | None = None,
        on_recording_failed: Callable[[str], object] | None = None,
    ) -> None:
        judging = judging if judging is not None else Judging()
        self.clock = clock
        self.thresholds = judging.thresholds
        self.interval = judging.interval  # the chosen poll interval; cadence() is faster while unsettled
        self.keep = keep
        self.timeline = Timeline(pools=judging.pools, keep=keep)
        self.recording = recording
        self._on_failed = on_recording_failed
        self._judged: list[Judgement] = []  # the last few asked for, latest last (a paused screen)

    @property
    def pools(self) -> Pools:
        """How HAProxy's backends are told apart."""
        return self.timeline.pools

    def events(self) -> list[Event]:
        """The timeline's events, in the order observed."""
        return self.timeline.events()

    def observe(self, snapshot: ClusterSnapshot, scrubbed: str | None = None) -> list[Event]:
        """Fold one snapshot in and record it; the events it added or updated."""
        new = self.timeline.observe(snapshot)
        self._write(lambda r: r.cycle(snapshot, self.timeline.events(), scrubbed))
        return new

    def judged(self, snapshot: ClusterSnapshot) -> Judgement:
        """The judgement of a snapshot observed, made once: every output reads this one."""
        for known in self._judged:
            if known.snapshot is snapshot:  # identity: pydantic's == would compare whole snapshots
                self._judged = [*(j for j in self._judged if j is not known), known]
                return known
        made = judgement(
            snapshot,
            self.thresholds,
            self.pools,
            self.timeline.seen_checks(),
            past_outages(self.timeline.failovers()),
        )
        self._judged = [*self._judged[-(JUDGEMENTS_KEPT - 1) :], made]
        return made

    def cadence(self) -> float:
        """The poll interval now: the chosen one when calm, faster while something is wrong."""
        return cadence(self.timeline, self.interval, self.clock())

    def mark(self, text: str, source: str = "marker", at: datetime | None = None) -> Event:
        """A marker stamped now (or ``at``, as sent by a serve), on the timeline and in the recording."""
        when = self.clock() if at is None else at
        event = self.timeline.mark(when, text, source)
        self._write(lambda r: r.marker(when, text, source, self.timeline.events()))
        return event

    def action(
        self, text: str, phase: Literal["sent", "done"], *, ok: bool | None = None, node: str | None = None
    ) -> Event:
        """An operator action sent or done, stamped now."""
        event = self.timeline.action(self.clock(), text, phase, ok=ok, node=node)
        self._write(lambda r: r.sync_events(self.timeline.events()))
        return event

    def add(self, event: Event) -> Event:
        """Any other event from outside the poll."""
        stored = self.timeline.add(event)
        self._write(lambda r: r.sync_events(self.timeline.events()))
        return stored

    def replay(self, snapshots: Iterable[ClusterSnapshot], events: Sequence[Event] = ()) -> None:
        """Start again from recorded snapshots, with ``events`` (as sent) placed by time among them."""
        self.timeline = Timeline(pools=self.pools, keep=self.keep)
        self._judged = []  # made against the timeline replaced
        pending = sorted(events, key=lambda e: e.at)
        i = 0
        for snap in snapshots:
            while i < len(pending) and pending[i].at <= snap.taken_at:
                self.timeline.add(pending[i].model_copy(update={"id": 0}))
                i += 1
            self.timeline.observe(snap)
        for event in pending[i:]:
            self.timeline.add(event.model_copy(update={"id": 0}))

    def made_by(self, snapshot: ClusterSnapshot) -> list[Event]:
        """The events one snapshot makes by itself (Patroni's /history), on a timeline of its own."""
        return Timeline(pools=self.pools).observe(snapshot)

    def _write(self, write: Callable[[Recording], None]) -> None:
        r = self.recording
        if r is None or r.error is not None:
            return
        write(r)
        if r.error is not None and self._on_failed is not None:
            self._on_failed(r.error)  # disk full, file removed: said once, the session goes on
