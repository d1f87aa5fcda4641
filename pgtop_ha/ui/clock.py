"""Injected time, so tests and replay show the same screen every run."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, as an aware datetime in the local time zone."""
    return datetime.now().astimezone()


def fixed_clock(at: datetime) -> Clock:
    """A clock that always answers ``at`` (tests, screenshots)."""
    return lambda: at
