"""The session every driver runs: what it records, says, judges and rebuilds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pgtop_ha.engines.session import Session
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from tests.models.builders import healthy, leader, t


class FlakyRecording:
    """Takes ``good`` cycles, then fails as a full disk does (Recorder.error set, nothing written)."""

    def __init__(self, good: int) -> None:
        self.good = good
        self.error: str | None = None
        self.cycles: list[datetime] = []
        self.markers: list[str] = []

    def cycle(self, snapshot: ClusterSnapshot, events: Sequence[Event], scrubbed: str | None = None) -> None:
        if len(self.cycles) == self.good:
            self.error = "rec.pgtop: No space left on device"
            return
        self.cycles.append(snapshot.taken_at)

    def marker(self, at: datetime, text: str, source: str, events: Sequence[Event]) -> None:
        self.markers.append(text)

    def sync_events(self, events: Sequence[Event]) -> None:
        return None


def test_a_failed_recording_is_said_once_and_the_session_goes_on() -> None:
    said: list[str] = []
    rec = FlakyRecording(good=2)
    session = Session(clock=lambda: t(0), recording=rec, on_recording_failed=said.append)
    for i in range(5):
        session.observe(healthy(i))
    session.mark("after the failure")
    assert rec.cycles == [t(0), t(1)] and rec.markers == []
    assert said == ["rec.pgtop: No space left on device"]
    assert any(e.text == "after the failure" for e in session.events())  # still on the timeline


def test_markers_are_stamped_by_the_clock_or_as_sent() -> None:
    session = Session(clock=lambda: t(42))
    assert session.mark("now").at == t(42)
    assert session.mark("from a serve", "viewer", at=t(7)).at == t(7)


def test_judge_gives_the_verdicts_of_the_snapshot_observed() -> None:
    session = Session(clock=lambda: t(0))
    session.observe(healthy(0))
    assert session.judged(healthy(0)).verdicts == ()
    lost = leader(healthy(1), None)
    session.observe(lost)
    assert "leader.none" in {v.rule for v in session.judged(lost).verdicts}


def test_a_snapshot_is_judged_once_and_a_paused_screen_keeps_its_judgement() -> None:
    session = Session(clock=lambda: t(0))
    first, lost = healthy(0), leader(healthy(1), None)
    session.observe(first)
    judged = session.judged(first)
    assert session.judged(first) is judged
    session.observe(lost)
    assert session.judged(lost) is not judged
    assert session.judged(first) is judged  # the snapshot a paused screen still shows
    assert session.judged(healthy(0)) is not judged  # an equal snapshot is another reading


def test_replay_places_events_among_the_snapshots_by_time() -> None:
    session = Session(clock=lambda: t(0), keep=100)
    session.observe(healthy(0))
    marker = Event(id=9, at=t(1.5), kind="marker", text="kill -9 node1", source="marker")
    session.replay([healthy(1), healthy(2)], [marker])
    texts = [e.text for e in session.events()]
    assert "kill -9 node1" in texts
    stored = next(e for e in session.events() if e.text == "kill -9 node1")
    assert stored.id != 9  # numbered by the rebuilt timeline
    before = session.events()
    session.made_by(leader(healthy(3), None))  # on a timeline of its own
    assert session.events() == before
