"""`pgtop-ha attach`: the console fed by a `serve` (its stream is serve/viewer.py).

Structurally read-only: the app gets no actions object. A marker goes to the serve, which stamps
it and sends it back to every viewer, this one too.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from textual.worker import Worker, WorkerState

from pgtop_ha.models.event import Event
from pgtop_ha.models.sections import ConsoleSections, Mode
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.serve.viewer import AttachSource
from pgtop_ha.ui.app import HISTORY, PgtopApp

KEPT_AS_SENT = ("marker", "action")  # events no snapshot can make again


def _key(event: Event) -> tuple[object, ...]:
    return (event.at, event.kind, event.node, event.text)


class AttachApp(PgtopApp):
    """The console over a serve's stream: no actions, the serve's pace."""

    CSS_PATH = str(Path(__file__).resolve().parent / "app.tcss")

    def __init__(self, sections: ConsoleSections, source: AttachSource) -> None:
        label = str(source.address)
        mode = Mode(True, f"read-only: attached to {label} (no actions exist)", "attached")
        super().__init__(sections, source, actions=None, mode=mode)
        self.attached = source
        self.ended: str | None = None  # why the stream ended: said on exit, as one line
        source.on_backlog = self._seed
        source.on_marker = self._marked
        self.title = f"pgtop-ha attach {label}"

    def cadence(self) -> float:
        """The serve polls; a viewer has no pace of its own."""
        return self.interval

    def _seed(self, events: list[Event], before: list[ClusterSnapshot]) -> None:
        # The serve's timeline, rebuilt: events older than the snapshots it still holds as sent,
        # then those snapshots observed here, markers and actions between them in their place.
        start = before[0].taken_at if before else None
        # What the first snapshot makes by itself (Patroni's /history) is not taken twice.
        again = {_key(e) for e in self.session.made_by(before[0])} if before else set()
        kept = [
            e
            for e in events
            if (e.kind in KEPT_AS_SENT or start is None or e.at < start) and _key(e) not in again
        ]
        self.session.replay(before, kept)
        self.history.extend(before[-HISTORY:])
        self.event_count = len(self.session.events())

    def _marked(self, at: datetime, text: str, source: str) -> None:
        self.session.mark(text, source, at=at)
        self.event_count += 1

    def mark(self, text: str, source: str = "marker") -> Event:
        """Send a marker to the serve; it comes back stamped with this viewer's identity, to every viewer."""
        self.attached.send_mark(text)
        return Event(at=self.clock(), kind="marker", text=text, source=source)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The stream's end ends the viewer: stale data is never left on screen as if live."""
        if event.worker is self._poll and event.state is WorkerState.ERROR:
            self.ended = str(event.worker.error)
            self.exit(return_code=1)
