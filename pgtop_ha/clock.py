"""Injected time: the read path asks a Clock, so tests and replay are deterministic."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
