"""Clocks for tests and screenshots: time that stands still or moves one step per reading."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pgtop_ha.clock import Clock


def fixed_clock(at: datetime) -> Clock:
    """A clock that always answers ``at`` (tests, screenshots)."""
    return lambda: at


class StepClock:
    """A clock one ``step`` later on every reading (tests that need time to move)."""

    def __init__(self, start: datetime = datetime(2025, 1, 1, tzinfo=UTC), step: float = 1.0) -> None:
        self.now = start
        self.step = timedelta(seconds=step)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now
