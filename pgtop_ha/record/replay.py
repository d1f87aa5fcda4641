"""Replay: a recording as a snapshot source for the console, with play/pause, step, seek and speed.

It feeds the same app the Poller feeds, so the replayed console is the live one; the app's clock
is this source's ``clock`` (the recorded time of the frame shown), so ages and staleness are
what they were at that moment.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import deque
from collections.abc import Callable
from datetime import datetime

from pgtop_ha.errors import UserError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.reader import Frame, Recording
from pgtop_ha.record.store import epoch

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
MAX_GAP_S = 5.0  # a longer gap (recorder stopped, snapshots thinned) plays in this many seconds
HISTORY = 30  # snapshots before the shown one, for rates and sparklines (the app keeps as many)
# After a jump the app's timeline is rebuilt from the snapshots just before the target, so its
# checks, banner and stopwatch are those of that moment (bounded: a key press stays quick).
WARMUP_S = 120.0
WARMUP_FRAMES = 240
EVENTS = 500  # events shown at most, like the live console


class ReplaySource:
    """Plays a Recording: one snapshot at a time, at the recorded pace times ``speed``."""

    def __init__(self, recording: Recording, *, speed: float = 1.0, playing: bool = True) -> None:
        first = recording.first()
        if first is None:
            raise UserError(f"{recording.path} holds no snapshot yet; record at least one cycle")
        self.recording = recording
        self.speed = min(SPEEDS, key=lambda s: abs(s - speed))
        self.playing = playing
        self.frame: Frame = first
        self.index = 0
        self.total = recording.count()
        self.current: ClusterSnapshot | None = None
        self.recent: deque[ClusterSnapshot] = deque(maxlen=HISTORY)
        self.at_end = False
        self.shown = 0  # frames handed to the app
        self._events = recording.events()
        self._event_times = [epoch(e.at) for e in self._events]
        self._target: Frame | None = first  # the frame to show next (None: nothing pending)
        self._jump = True  # the next frame is not the successor of the one shown: reload history
        self._wake: asyncio.Event | None = None
        # Called before a frame reached by a jump is shown, with the snapshots of the warm-up window.
        self.on_jump: Callable[[list[ClusterSnapshot]], object] | None = None

    # -- what the app reads --------------------------------------------------------------------

    def clock(self) -> datetime:
        """The recorded time of the frame shown (the app's injected clock)."""
        return self.current.taken_at if self.current is not None else self.frame.when

    def history(self) -> tuple[ClusterSnapshot, ...]:
        """The snapshots recorded before the shown one, oldest first."""
        return tuple(self.recent)

    def events_until(self) -> tuple[Event, ...]:
        """The recorded events up to the shown frame's time (markers and actions included)."""
        end = bisect.bisect_right(self._event_times, epoch(self.clock()))
        return tuple(self._events[max(0, end - EVENTS) : end])

    def status(self) -> str:
        """Play state, speed and position, for the header."""
        state = "⏸" if not self.playing else "▶"
        end = " end" if self.at_end and not self.playing else ""
        when = self.clock().astimezone()
        return f"{state} replay {when:%Y-%m-%d %H:%M:%S} ×{self.speed:g} {self.index + 1}/{self.total}{end}"

    # -- the source protocol -------------------------------------------------------------------

    async def run(
        self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
    ) -> None:
        """Show frames until cancelled: the pending one at once, the next after the recorded gap."""
        self._wake = asyncio.Event()
        while True:
            if self._target is not None:
                self._show(self._target, on_snapshot)
                self._target = None
            delay = self._delay() if self.playing else None
            self._wake.clear()
            woken = False
            if delay is None:
                await self._wake.wait()
                woken = True
            else:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                        woken = True
            if not woken and self.playing and self._target is None:
                nxt = self.recording.after(self.frame)
                if nxt is None:
                    self.playing, self.at_end = False, True
                else:
                    self._target = nxt

    def _delay(self) -> float | None:
        nxt = self.recording.after(self.frame)
        if nxt is None:
            self.total = max(self.total, self.index + 1)
            self.playing, self.at_end = False, True
            return None
        return min(MAX_GAP_S, max(0.0, nxt.taken_at - self.frame.taken_at)) / self.speed

    def _show(self, frame: Frame, on_snapshot: Callable[[ClusterSnapshot], object]) -> None:
        snap = self.recording.readable(frame)
        if snap is None:
            self.frame = frame  # a damaged row (counted by the recording): play on past it
            return
        if self._jump or self.current is None:
            earlier = self.recording.before(frame, max(HISTORY, WARMUP_FRAMES))
            read = [(f, self.recording.readable(f)) for f in earlier]
            kept = [(f, s) for f, s in read if s is not None]
            self.recent.clear()
            self.recent.extend(s for _, s in kept[-HISTORY:])
            if self.on_jump is not None:
                self.on_jump([s for f, s in kept if frame.taken_at - f.taken_at <= WARMUP_S])
            self.index = self.recording.position(frame)
            self.total = self.recording.count()
        else:
            self.recent.append(self.current)
            self.index += 1
        self._jump = False
        self.frame, self.current = frame, snap
        self.at_end = False
        self.shown += 1
        on_snapshot(snap)

    async def aclose(self) -> None:
        """Close the recording."""
        self.recording.close()

    # -- controls (keys) -----------------------------------------------------------------------

    def _go(self, frame: Frame | None, *, jump: bool) -> None:
        if frame is None:
            return
        if frame == self.frame:
            self._target = None  # back where we are: cancel a pending move
            return
        self._target = frame
        self._jump = jump
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def toggle(self) -> bool:
        """Play or pause; at the end, play starts again from the first frame. Returns playing."""
        if not self.playing and self.recording.after(self.frame) is None:
            self._go(self.recording.first(), jump=True)
        self.playing = not self.playing
        self._poke()
        return self.playing

    def step(self, direction: int) -> None:
        """Pause and show the next (+1) or previous (-1) frame."""
        self.playing = False
        base = self._target or self.frame
        if direction > 0:
            # Straight after the frame shown, history just grows; after a pending one, reload it.
            self._go(self.recording.after(base), jump=self._target is not None)
        else:
            before = self.recording.before(base, 1)
            self._go(before[0] if before else None, jump=True)
        self._poke()

    def seek(self, seconds: float) -> None:
        """Move by ``seconds`` of recorded time (to the nearest frame in that direction)."""
        target = (self._target or self.frame).taken_at + seconds
        if seconds >= 0:
            frame = self.recording.at_or_after(target) or self.recording.last()
        else:
            frame = self.recording.at_or_before(target) or self.recording.first()
        self._go(frame, jump=True)

    def seek_to(self, when: datetime) -> None:
        """Show the frame at (or just before) ``when``."""
        frame = self.recording.at_or_before(epoch(when)) or self.recording.first()
        self._go(frame, jump=True)

    def change_speed(self, direction: int) -> float:
        """One step faster (+1) or slower (-1) on the speed ladder; returns the speed."""
        i = SPEEDS.index(self.speed) + (1 if direction > 0 else -1)
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i))]
        self._poke()
        return self.speed
