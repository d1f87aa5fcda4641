"""Injected time: code asks a Clock, so tests, screenshots and replay are deterministic."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)


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
