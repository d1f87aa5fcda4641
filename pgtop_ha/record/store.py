"""The recording file: SQLite (standard library), one transaction per cycle, write-ahead log.

WAL with synchronous=NORMAL: a commit is in the -wal file when it returns, so a kill -9 of the
recorder loses nothing committed (only a power cut can lose the last commits) and the file opens
as it was after the last whole cycle. Readers (replay, events) can open it while it is recorded.
"""

from __future__ import annotations

import sqlite3
import zlib
from datetime import UTC, datetime
from pathlib import Path

from pgtop_ha.errors import UserError

FORMAT = "pgtop-ha recording"
FORMAT_VERSION = 1
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024  # inflated; a larger row is a broken or hostile file

SCHEMA = """
CREATE TABLE IF NOT EXISTS header (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (id INTEGER PRIMARY KEY, taken_at REAL NOT NULL, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS snapshots_taken_at ON snapshots (taken_at);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, at REAL NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_at ON events (at);
CREATE TABLE IF NOT EXISTS markers (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, text TEXT NOT NULL, source TEXT NOT NULL
);
"""


def epoch(at: datetime) -> float:
    """Seconds since the epoch (what the time columns hold; indexed, so seeks are range scans)."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return at.timestamp()


def from_epoch(seconds: float) -> datetime:
    """An aware UTC datetime from an epoch column."""
    return datetime.fromtimestamp(seconds, UTC)


def compress(text: str) -> bytes:
    """A snapshot's JSON as stored (zlib level 6: ~10x smaller, ~1 ms for a large cluster)."""
    return zlib.compress(text.encode(), 6)


def inflate(blob: bytes, what: str) -> str:
    """A stored snapshot's JSON, inflated up to MAX_SNAPSHOT_BYTES (a recording is untrusted)."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(blob, MAX_SNAPSHOT_BYTES)
    except zlib.error:
        raise UserError(f"{what}: a snapshot row is damaged (not zlib data); is the file whole?") from None
    if inflater.unconsumed_tail:
        raise UserError(f"{what}: a snapshot row inflates beyond 64 MiB; is this a pgtop-ha recording?")
    return raw.decode("utf-8", errors="replace")


def connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, synchronous=NORMAL."""
    if read_only:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # After a checkpoint the -wal file shrinks back to this: the file on disk stays bounded.
        conn.execute("PRAGMA journal_size_limit=8388608")
    conn.execute("PRAGMA busy_timeout=2000")
    return conn
