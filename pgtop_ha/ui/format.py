"""Text for numbers and ages, rounded so noise below the shown precision never changes it."""

from __future__ import annotations

from collections.abc import Sequence

from pgtop_ha.models.health import human_bytes

__all__ = ["age", "bar", "duration", "human_bytes", "lsn", "rate", "sparkline", "yes_no"]

_SPARKS = "▁▂▃▄▅▆▇█"


def age(seconds: float | None) -> str:
    """An age, coarser as it grows: 7s, 30s, 4m, 2h05m, 3d."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 10:
        return f"{s}s"
    if s < 60:
        return f"{s // 10 * 10}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d"


def duration(seconds: float | None) -> str:
    """A lag in seconds: 0, 12ms, 1.4s, 42s, 3m."""
    if seconds is None:
        return "-"
    if seconds < 0.001:
        return "0"
    if seconds < 1:
        return f"{int(seconds * 1000)}ms"
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{int(seconds)}s"
    return age(seconds)


def rate(bytes_per_s: float | None) -> str:
    """A byte rate: '-', '0', '1.2 MiB/s'."""
    if bytes_per_s is None:
        return "-"
    if bytes_per_s < 1:
        return "0"
    return human_bytes(int(bytes_per_s)) + "/s"


def lsn(value: int | None) -> str:
    """An LSN the way PostgreSQL prints it (X/X)."""
    if value is None:
        return "-"
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def yes_no(value: bool | None, yes: str = "yes", no: str = "-") -> str:
    """A flag as a word; unknown is '?'."""
    if value is None:
        return "?"
    return yes if value else no


def sparkline(values: Sequence[float | None], width: int = 10) -> str:
    """The last ``width`` values as block characters scaled to their maximum; gaps are spaces."""
    tail = list(values)[-width:]
    known = [v for v in tail if v is not None]
    top = max(known, default=0.0)
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif top <= 0:
            out.append(_SPARKS[0])
        else:
            out.append(_SPARKS[min(len(_SPARKS) - 1, int(v / top * (len(_SPARKS) - 1)))])
    return "".join(out)


def bar(fraction: float | None, width: int = 12) -> str:
    """A progress bar of ``width`` cells, e.g. '██████░░░░░░'."""
    if fraction is None:
        return "·" * width
    filled = max(0, min(width, int(fraction * width)))
    return "█" * filled + "░" * (width - filled)
