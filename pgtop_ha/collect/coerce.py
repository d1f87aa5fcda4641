"""Lenient readers of untrusted JSON values: the wrong type becomes None, never an exception."""

from __future__ import annotations

import re
from typing import Any

from pgtop_ha.models.numbers import INT_LIMIT, finite
from pgtop_ha.models.text import SAFE_TEXT, clean

# Everything PostgreSQL and Patroni send as a number fits a signed 64-bit int (bigint, LSNs as
# offsets, timelines, lags); anything wider is a broken or hostile server, not a value.
# At most 19 digits (2**63 has 19): int() of a 100,000-digit string is slow or raises.
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,19}")


def as_int(value: Any) -> int | None:
    """A signed 64-bit int (integral floats and digit strings count); anything else gives None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value.strip()):
        result = int(value.strip())
    else:
        return None
    return result if -INT_LIMIT < result < INT_LIMIT else None


def as_float(value: Any) -> float | None:
    """A finite float from an int or float, else None."""
    return finite(value)


def as_str(value: Any) -> str | None:
    """A string (cleaned: no control, format or separator characters), else None."""
    if not isinstance(value, str):
        return None
    return value if SAFE_TEXT.fullmatch(value) else clean(value, keep_newlines=True)


def as_bool(value: Any) -> bool | None:
    """A bool, else None."""
    return value if isinstance(value, bool) else None


def as_dict(value: Any) -> dict[str, Any] | None:
    """A dict with string keys, else None."""
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return value
    return None
