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
MAX_NOTES = 8  # fields of the wrong type named per answer


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


class Fields:
    """Typed reads of one untrusted object: a field of the wrong type is unknown and named, never false."""

    def __init__(self, body: dict[str, Any], what: str) -> None:
        self.body = body
        self.what = what
        self.notes: list[str] = []

    def note(self, key: str, why: str) -> None:
        """Name a field that cannot be taken as sent (at most a few: a hostile answer may have many)."""
        if len(self.notes) < MAX_NOTES:
            self.notes.append(f"{self.what} {clean(key)[:40]} {why}")

    def _shown(self, value: Any) -> str:
        text = value if isinstance(value, str) else type(value).__name__
        return repr(clean(text)[:24] + ("…" if len(text) > 24 else ""))

    def flag(self, key: str) -> bool | None:
        """A bool; absent is None; anything else is None and named."""
        value = self.body.get(key)
        if value is None or isinstance(value, bool):
            return value
        self.note(key, f"is {self._shown(value)}, not true or false: read as unknown")
        return None

    def whole(self, key: str, *, minimum: int | None = None, unknown: tuple[str, ...] = ()) -> int | None:
        """An int (at least ``minimum``); absent or in ``unknown``: None; anything else: None, named."""
        value = self.body.get(key)
        if value is None or value in unknown:
            return None
        result = as_int(value)
        if result is None:
            self.note(key, f"is {self._shown(value)}, not a whole number: read as unknown")
        elif minimum is not None and result < minimum:
            self.note(key, f"is {result}, below {minimum}: not data, read as unknown")
            return None
        return result

    def text(self, key: str) -> str | None:
        """A string; absent is None; anything else is None and named."""
        value = self.body.get(key)
        if value is None:
            return None
        result = as_str(value)
        if result is None:
            self.note(key, f"is {self._shown(value)}, not text: read as unknown")
        return result
