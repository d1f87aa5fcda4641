"""pgBackRest as the console sees it: stanzas from `pgbackrest info`, the async spool, the push queue.

Numbers here come only through collect/pgbackrest.py, which range-checks them while parsing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pgtop_ha.models.base import Frozen

WAL_SEGMENT_BYTES = 16 * 1024 * 1024
QueueLevel = Literal["ok", "warn", "crit", "dropping", "unknown"]


class BackupInfo(Frozen):
    """The newest backup of one type (full, diff or incr) in a stanza."""

    type: str
    label: str
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    age_s: float | None = None
    error: bool = False
    size_bytes: int | None = None
    repo_size_bytes: int | None = None
    wal_start: str | None = None
    wal_stop: str | None = None


class StanzaInfo(Frozen):
    """One stanza of `pgbackrest info --output=json`."""

    name: str
    status_code: int | None = None
    status_message: str | None = None
    backup_running: bool | None = None
    backup_count: int = 0
    full: BackupInfo | None = None
    diff: BackupInfo | None = None
    incr: BackupInfo | None = None
    archive_min: str | None = None
    archive_max: str | None = None
    repo_errors: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """pgBackRest says the stanza is fine (status code 0)."""
        return self.status_code == 0


class SpoolState(Frozen):
    """The async archive-push spool (spool-path/archive/<stanza>/out): acknowledgements per segment."""

    stanza: str
    path: str
    ok_count: int = 0
    error_count: int = 0
    newest_error_file: str | None = None
    newest_error_at: datetime | None = None
    newest_error: str | None = None
    truncated: bool = False
    error: str | None = None


class QueueState(Frozen):
    """WAL waiting to be pushed against archive-push-queue-max."""

    ready_count: int | None = None
    queue_bytes: int | None = None
    queue_max_bytes: int | None = None
    share: float | None = None
    level: QueueLevel = "unknown"


class PgBackRestState(Frozen):
    """The pgBackRest source: stanzas, spool, configured queue limit, and how the source fares."""

    enabled: bool = False
    stanzas: tuple[StanzaInfo, ...] = ()
    spools: tuple[SpoolState, ...] = ()
    queue_max_bytes: int | None = None
    error: str | None = None
    last_ok_at: datetime | None = None
    slow_s: float | None = None
    config: str | None = None  # the pgbackrest.conf read (None: none found)
    no_stanza: str | None = None  # why `info` listed no stanza, when it listed none
    # False when nobody asked for it ([pgbackrest] enabled unset, and one was found on this host):
    # then finding nothing is information, never a problem.
    asked: bool = True


_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3,
          "t": 1024**4, "tb": 1024**4, "p": 1024**5, "pb": 1024**5}  # fmt: skip


def parse_size(text: str) -> int | None:
    """A pgBackRest size option (``1GB``, ``512MiB``-less forms ``512m``, plain bytes); None if not one."""
    word = text.strip().lower()
    digits = word.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = word[len(digits) :].strip()
    if not digits.isdigit() or unit not in _UNITS or len(digits) > 18:
        return None
    return int(digits) * _UNITS[unit]
