"""Numbers from untrusted sources: the one rule for what counts as a usable number."""

from __future__ import annotations

import math

INT_LIMIT = 2**63  # what PostgreSQL's bigint holds; Patroni and HAProxy send nothing larger


def finite(value: object) -> float | None:
    """``value`` as a finite float; None for None, non-numbers, bools, NaN, ±inf and huge ints."""
    if type(value) is float:  # the common case first: every number cell of every pane comes here
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        result = float(value)
    except OverflowError:  # an int beyond float's range
        return None
    return result if math.isfinite(result) else None


def binary_size(value: int | None) -> str:
    """Bytes with a binary unit and at most 3 significant digits (noise stays hidden)."""
    if value is None:
        return "-"
    size = float(value)
    sign = "-" if size < 0 else ""
    size = abs(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            if unit == "B":
                return f"{sign}{int(size)} B"
            return f"{sign}{size:.1f} {unit}" if size < 10 else f"{sign}{size:.0f} {unit}"
        size /= 1024
    return f"{sign}{size:.0f} PiB"  # unreachable: the loop returns at TiB
