"""`pgtop-ha replay FILE`: the app over a recording (its screen is ui/screens/replay.py).

Structurally read-only: the app gets no actions object, so no write binding or screen exists.
"""

from __future__ import annotations

from pathlib import Path

from textual.screen import Screen

from pgtop_ha.models.sections import ConsoleSections, Mode
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.replay import ReplaySource
from pgtop_ha.ui.app import HISTORY, PgtopApp
from pgtop_ha.ui.screens.replay import ReplayScreen


class ReplayApp(PgtopApp):
    """The console over a recording: no actions, the recorded time as its clock."""

    # Textual resolves a relative CSS_PATH against the subclass's module: point at the app's own.
    CSS_PATH = str(Path(__file__).resolve().parent / "app.tcss")

    def __init__(self, sections: ConsoleSections, source: ReplaySource, path: Path) -> None:
        mode = Mode(True, f"read-only: replay of {path} (no actions exist)", "replay")
        super().__init__(sections, source, actions=None, clock=source.clock, mode=mode)
        self.replay = source
        source.on_jump = self._rewind
        self.title = f"pgtop-ha replay {path.name}"

    def _main_screen(self) -> Screen[None]:
        return ReplayScreen.keyed()()

    def cadence(self) -> float:
        """A replay does not poll: its pace is the recording's, times the speed."""
        return self.interval

    def _rewind(self, before: list[ClusterSnapshot]) -> None:
        # A seek or a step back: the timeline and history must not hold what comes after the
        # target, or the banner and stopwatch would show the future. Start them again from the
        # snapshots just before it; the target itself then arrives as usual.
        self.session.replay(before)
        self.history.clear()
        self.history.extend(before[-HISTORY:])
