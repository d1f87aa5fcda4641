"""Injected time: code asks a Clock, so tests, screenshots and replay are deterministic.

Tests' own clocks (fixed, stepping) are in tests/support/clocks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(UTC)
