"""`pgtop-ha replay FILE`: the console fed by a recording, with play/pause, step, seek and speed keys.

Structurally read-only: the app gets no actions object, so no write binding or screen exists.
The header shows the recorded time; panes see the recorded events and the snapshots before the
shown one, as they were at that moment.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from rich.text import Text
from textual.binding import Binding

from pgtop_ha.record.replay import ReplaySource
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.screens.monitor import MonitorScreen

SEEK_S = 10.0
LONG_SEEK_S = 60.0
_REPLAY = Binding.Group("Replay", compact=True)

REPLAY_HELP = f"""
[b]Replay[/b] (recorded time in the header; nothing can act on a cluster)
  space, p  play / pause (at the end, play starts again from the beginning)
  . / ,     one snapshot forward / back (pauses)
  ] / [     seek {SEEK_S:g} s forward / back      }} / {{   {LONG_SEEK_S:g} s forward / back
  > / <     faster / slower (×0.25 … ×64); - / + as well (as in the live console)
"""


class ReplayScreen(MonitorScreen):
    """The monitor screen with replay keys instead of poll keys."""

    BINDINGS = [
        Binding("space", "toggle_play", "Play/Pause", group=_REPLAY),
        Binding("full_stop", "step(1)", "Step", key_display=".", group=_REPLAY),
        Binding("comma", "step(-1)", "Back", key_display=",", group=_REPLAY),
        Binding("right_square_bracket", f"seek({SEEK_S})", "+10s", key_display="]", group=_REPLAY),
        Binding("left_square_bracket", f"seek({-SEEK_S})", "-10s", key_display="[", group=_REPLAY),
        Binding("right_curly_bracket", f"seek({LONG_SEEK_S})", "+1min", show=False),
        Binding("left_curly_bracket", f"seek({-LONG_SEEK_S})", "-1min", show=False),
        Binding("greater_than_sign", "speed(1)", "Faster", key_display=">", group=_REPLAY),
        Binding("less_than_sign", "speed(-1)", "Slower", key_display="<", group=_REPLAY),
    ]

    @property
    def replay(self) -> ReplaySource:
        """The app's source, typed."""
        return cast("ReplaySource", self.papp.source)

    def context(self) -> Context:
        """The recorded events and history as of the shown frame, not what the app folded itself."""
        ctx = super().context()
        return dataclasses.replace(ctx, history=self.replay.history(), events=self.replay.events_until())

    def header_lead(self) -> Text:
        """Play state, recorded time, speed and position, first (what matters at 80 columns)."""
        return Text(f" {self.replay.status()} ", style=self._header_styles.get("paused") or "reverse")

    def action_toggle_play(self) -> None:
        """Play or pause the replay."""
        self.replay.toggle()
        self.refresh_header()

    def action_pause(self) -> None:
        """`p` plays or pauses too (there is no live display to freeze)."""
        self.action_toggle_play()

    def action_step(self, direction: int) -> None:
        """One snapshot forward or back."""
        self.replay.step(direction)
        self.refresh_header()

    def action_seek(self, seconds: float) -> None:
        """Move through recorded time."""
        self.replay.seek(seconds)
        self.refresh_header()

    def action_speed(self, direction: int) -> None:
        """Play faster or slower."""
        self.replay.change_speed(direction)
        self.refresh_header()

    def action_slower(self) -> None:
        """`-` : slower replay (there is no poll interval)."""
        self.action_speed(-1)

    def action_faster(self) -> None:
        """`+` : faster replay."""
        self.action_speed(+1)

    def action_mark(self) -> None:
        """A replay records nothing: say so instead of asking for a marker."""
        self.notify("markers are for live consoles and recorders; a replay records nothing", timeout=4)

    def help_extra(self) -> str:
        """The replay keys."""
        return REPLAY_HELP
