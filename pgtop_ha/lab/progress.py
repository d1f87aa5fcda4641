"""Step-by-step progress lines for long lab operations (a person watches them)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """Prints numbered steps and elapsed time; waits print a status line every few seconds."""

    def __init__(self, total: int, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.out = out or sys.stderr
        self.clock = clock
        self.started = clock()
        self.step_no = 0
        self._last_note = 0.0

    def elapsed(self) -> float:
        """Seconds since this progress began."""
        return self.clock() - self.started

    def step(self, text: str) -> None:
        """Announce the next step."""
        self.step_no += 1
        print(f"[{self.step_no}/{self.total}] {text}", file=self.out, flush=True)

    def note(self, text: str, every: float = 3.0) -> None:
        """A waiting status line, at most one per ``every`` seconds."""
        now = self.clock()
        if now - self._last_note >= every:
            self._last_note = now
            print(f"      … {text} ({self.elapsed():.0f}s)", file=self.out, flush=True)

    def done(self, text: str) -> None:
        """The final line, with total time."""
        print(f"{text} in {self.elapsed():.1f}s", file=self.out, flush=True)
