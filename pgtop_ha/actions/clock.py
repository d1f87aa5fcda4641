"""The clock actions read time from, injected so tests can control it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)
