"""How big a recording may grow: ``--record-max`` as a size ("1GiB", "500MB") or an age ("6h")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pgtop_ha.errors import UserError

DEFAULT = "1GiB"
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}
_AGES = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[a-z]*)")
MIN_BYTES = 16 * 1024  # below this not even the header and one snapshot fit


@dataclass(frozen=True)
class RecordLimit:
    """Either a size in bytes or an age in seconds (the other is None)."""

    max_bytes: int | None = None
    max_age_s: float | None = None

    def describe(self) -> str:
        """The limit in words, for the header and the status line."""
        if self.max_bytes is not None:
            if self.max_bytes >= 1024**3:
                return f"{self.max_bytes / 1024**3:g} GiB"
            return f"{self.max_bytes / 1024**2:.1f} MiB"
        return f"{(self.max_age_s or 0) / 3600:g} h"


def parse_limit(text: str) -> RecordLimit:
    """``1GiB``, ``500MB``, ``64k`` (bytes) or ``6h``, ``90m``, ``2d`` (age); UserError otherwise."""
    raw = text.strip().lower()
    m = _SIZE.fullmatch(raw)
    hint = "write a size like 1GiB or 500MB, or hours like 6h"
    if m is None:
        raise UserError(f"--record-max {text!r} is not a size or an age; {hint}")
    number, unit = float(m.group("n")), m.group("unit")
    # "m" alone is ambiguous: a trailing "m" after hours is what people type for minutes; sizes
    # in MB are written "mb"/"mib". So bare m/min means minutes.
    if unit in _AGES:
        age = number * _AGES[unit]
        if age < 60:
            raise UserError(f"--record-max {text!r} keeps less than a minute; {hint}")
        return RecordLimit(max_age_s=age)
    if unit not in _UNITS:
        raise UserError(f"--record-max {text!r}: unknown unit {unit!r}; {hint}")
    size = int(number * _UNITS[unit])
    if size < MIN_BYTES:
        raise UserError(f"--record-max {text!r} is below {MIN_BYTES // 1024} KiB; {hint}")
    return RecordLimit(max_bytes=size)
