"""Levels and the limits that set them: a Band (warn, crit) per graded value.

The same Thresholds model is the ``[thresholds]`` section of the settings and what health grades
with, so a limit is declared once. Adding a graded value is one Band field here (with its
default) and the call that grades with it.
"""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any

from pydantic import Field, model_validator

from pgtop_ha.models.base import Frozen

MiB = 1024**2
GiB = 1024**3


class Level(IntEnum):
    """How bad a value is; ordered so max() gives the worst."""

    OK = 0
    WARN = 1
    CRIT = 2

    @property
    def word(self) -> str:
        """The level as a word with a symbol, readable without colour."""
        return _WORDS[self]

    @property
    def symbol(self) -> str:
        """The level's symbol alone (✔ ▲ ✖), for narrow cells."""
        return _WORDS[self].split()[0]


_WORDS = {Level.OK: "✔ OK", Level.WARN: "▲ WARN", Level.CRIT: "✖ CRIT"}


def grade(value: float | None, warn: float, crit: float) -> Level:
    """OK below ``warn``, WARN from ``warn``, CRIT from ``crit``; unknown is OK."""
    if value is None:
        return Level.OK
    if value >= crit:
        return Level.CRIT
    if value >= warn:
        return Level.WARN
    return Level.OK


class Band(Frozen):
    """Where a value turns WARN and CRIT (warn ≤ crit)."""

    warn: float = Field(ge=0)
    crit: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Band:
        if self.warn > self.crit:
            raise ValueError(f"warn ({self.warn:g}) must not exceed crit ({self.crit:g})")
        return self

    def grade(self, value: float | None) -> Level:
        """``value`` graded against this band; unknown is OK."""
        return grade(value, self.warn, self.crit)


# Older configs spelt each band as two keys: lag_warn_bytes / lag_crit_bytes, archive_ready_warn.
_FLAT = re.compile(r"^(?P<name>[a-z_]+?)_(?P<part>warn|crit)(?P<unit>_bytes|_s)?$")


class Thresholds(Frozen):
    """Limits that turn a value WARN or CRIT, one Band each (the ``[thresholds]`` section)."""

    lag_bytes: Band = Field(Band(warn=16 * MiB, crit=256 * MiB), description="Replay lag in bytes.")
    lag_s: Band = Field(Band(warn=10.0, crit=60.0), description="Replay lag in seconds.")
    slot_retained_bytes: Band = Field(Band(warn=GiB, crit=8 * GiB), description="Slot retained WAL.")
    archive_ready: Band = Field(Band(warn=10, crit=100), description="Queued .ready files.")
    stale_s: Band = Field(Band(warn=5.0, crit=15.0), description="Seconds without fresh data.")
    lock_wait_s: Band = Field(
        Band(warn=10.0, crit=60.0), description="Seconds the query of a session waiting on a lock has run."
    )
    wal_disk_ratio: Band = Field(
        Band(warn=1.5, crit=3.0),
        description="pg_wal on disk as a multiple of max_wal_size + wal_keep_size.",
    )
    horizon_s: Band = Field(
        Band(warn=300.0, crit=1800.0),
        description="Seconds a session's or prepared transaction's xmin has held back vacuum.",
    )
    xact_s: Band = Field(
        Band(warn=600.0, crit=3600.0),
        description="Seconds a client's transaction has been open (10 s and longer are read).",
    )
    idle_xact_s: Band = Field(
        Band(warn=60.0, crit=600.0),
        description="Seconds a session has sat idle in transaction (10 s and longer are read).",
    )
    horizon_xacts: Band = Field(
        Band(warn=10_000_000, crit=100_000_000),
        description="Transactions since the xmin a session, slot, prepared transaction or standby holds.",
    )

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        """Accept the older flat keys (lag_warn_bytes = N) as parts of their band; never both forms."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        flat: dict[str, dict[str, Any]] = {}
        for key, value in data.items():
            m = _FLAT.match(key) if isinstance(key, str) else None
            name = f"{m['name']}{m['unit'] or ''}" if m else None
            if m and name in cls.model_fields:
                flat.setdefault(name, {})[m["part"]] = value
            else:
                out[key] = value
        for name, parts in flat.items():
            if name in out:
                raise ValueError(
                    f"{name} is given twice (as a band and as {name}'s warn/crit keys); keep one"
                )
            default = cls.model_fields[name].default
            out[name] = {"warn": default.warn, "crit": default.crit, **parts}
        return out
