"""The console's time: the project's injected Clock, plus a fixed one for tests and screenshots."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.clock import Clock, system_clock

__all__ = ["Clock", "fixed_clock", "system_clock"]


def fixed_clock(at: datetime) -> Clock:
    """A clock that always answers ``at`` (tests, screenshots)."""
    return lambda: at
