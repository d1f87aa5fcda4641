"""The recorder: each cycle's snapshot and the timeline's new or changed events, in one transaction."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pgtop_ha import __version__
from pgtop_ha.clock import Clock, system_clock
from pgtop_ha.errors import UserError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.text import clean
from pgtop_ha.record.limits import RecordLimit
from pgtop_ha.record.scrub import scrub, scrub_tree, scrubbed_json
from pgtop_ha.record.store import FORMAT, FORMAT_VERSION, SCHEMA, compress, connect, epoch
from pgtop_ha.settings import Settings

MARKER_CHARS = 500
MAX_MARKERS = 10_000  # markers in one recording, whatever its limit
MIN_KEPT = 4  # thinning never goes below this many snapshots
THIN_ROUNDS = 8  # thinning passes per cycle at most (each halves the oldest half)


class EventLog:
    """Which timeline events are already in the file, so each cycle writes only what changed.

    The timeline's list may grow at the end, have an event replaced in place (a debounced flip
    gets its duration), or lose its oldest entries (a bounded list): the rows of events that
    fell off the front stay in the file, replaced events are rewritten under their old number.
    """

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._seqs: list[int] = []
        self._next = 0

    def sync(self, events: Sequence[Event]) -> tuple[list[tuple[int, Event]], list[int]]:
        """Rows to write (number, event) and numbers to delete, to make the file match ``events``."""
        old = self._events
        where = {id(e): k for k, e in enumerate(old)}
        # Align on the first event still known by identity (frozen models: a change is a new object).
        offset = len(old)
        for i, ev in enumerate(events):
            k = where.get(id(ev))
            if k is not None:
                offset = k - i
                break
        writes: list[tuple[int, Event]] = []
        seqs: list[int] = []
        for i, ev in enumerate(events):
            k = i + offset
            if 0 <= k < len(old):
                seq = self._seqs[k]
                if old[k] is not ev:
                    writes.append((seq, ev))
            else:
                seq = self._next
                self._next += 1
                writes.append((seq, ev))
            seqs.append(seq)
        # Events gone from the end of the aligned window were withdrawn; those before it fell off.
        end = max(0, offset + len(events))
        deletes = self._seqs[end:] if events else []
        self._events = list(events)
        self._seqs = seqs
        return writes, deletes


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def header_values(settings: Settings, limit: RecordLimit, role: str, started: datetime) -> dict[str, Any]:
    """What the header holds: versions, who recorded, and the settings without any secret."""
    # patroni_password is excluded by the model itself; URLs and password-like keys are masked.
    shown = scrub_tree(settings.model_dump(mode="json"))
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "pgtop_ha_version": __version__,
        "textual_version": _version("textual"),  # metadata only: the headless recorder never imports it
        "python_version": platform.python_version(),
        "sqlite_version": sqlite3.sqlite_version,
        "role": role,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started_at": started.isoformat(),
        "record_max": limit.describe(),
        "interval": settings.interval,
        "settings": shown,
    }


def _create_file(path: Path) -> None:
    # O_EXCL: never overwrite (or follow a symlink to) anything; 0600: a recording holds queries.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        why = "give a new file name (a recording is never overwritten)"
        raise UserError(f"{path} already exists; {why}") from None
    except FileNotFoundError:
        raise UserError(f"{path}: no such directory; create {path.parent} or give another path") from None
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror}; give a writable path") from None
    os.close(fd)


def stored_json(snapshot: ClusterSnapshot) -> str:
    """A snapshot's JSON as a recording stores it: every secret masked."""
    return scrubbed_json(snapshot.model_dump_json())


class Recorder:
    """Appends a cluster's snapshots, events and markers to one recording file."""

    def __init__(self, path: Path, conn: sqlite3.Connection, limit: RecordLimit, clock: Clock) -> None:
        self.path = path
        self.limit = limit
        self._conn = conn
        self._clock = clock
        self._log = EventLog()
        self._page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        self.cycles = 0
        self.markers = 0
        self.markers_refused = 0  # past the limit: counted, not stored
        self.thinned = 0  # snapshots removed to stay within the limit
        self.last_event: Event | None = None
        self.error: str | None = None  # the first write error; the recorder stops there
        self._closed = False

    @classmethod
    def create(
        cls,
        path: Path,
        settings: Settings,
        limit: RecordLimit,
        *,
        role: str,
        clock: Clock = system_clock,
    ) -> Recorder:
        """A new recording at ``path`` (UserError when it exists or cannot be written)."""
        _create_file(path)
        try:
            conn = connect(path, read_only=False)
            conn.executescript(SCHEMA)
            values = header_values(settings, limit, role, clock())
            with _transaction(conn):
                conn.executemany(
                    "INSERT INTO header (key, value) VALUES (?, ?)",
                    [(k, json.dumps(v)) for k, v in values.items()],
                )
        except sqlite3.Error as exc:
            raise UserError(f"{path}: cannot create the recording ({exc}); give another path") from None
        return cls(path, conn, limit, clock)

    # -- writing -------------------------------------------------------------------------------

    def cycle(self, snapshot: ClusterSnapshot, events: Sequence[Event], scrubbed: str | None = None) -> None:
        """Store one cycle: the snapshot (``scrubbed``: its stored JSON, when made already) and every
        new or changed event, committed together."""
        if self.error is not None:
            return
        try:
            blob = compress(scrubbed if scrubbed is not None else stored_json(snapshot))
            with _transaction(self._conn):
                self._conn.execute(
                    "INSERT INTO snapshots (taken_at, data) VALUES (?, ?)", (epoch(snapshot.taken_at), blob)
                )
                self._write_events(events)
                self._bound(snapshot.taken_at)
            self.cycles += 1
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)

    def sync_events(self, events: Sequence[Event]) -> None:
        """Store events added between cycles (an action sent, a marker)."""
        if self.error is not None:
            return
        try:
            with _transaction(self._conn):
                self._write_events(events)
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)

    def marker(self, at: datetime, text: str, source: str, events: Sequence[Event]) -> None:
        """Store a marker and the timeline's events (which hold it too) in one transaction.

        Markers count under the limit: past it (or past MAX_MARKERS) one is refused and counted.
        """
        if self.error is not None:
            return
        try:
            full = self.limit.max_bytes is not None and self.used_bytes() > self.limit.max_bytes
            if full or self.markers >= MAX_MARKERS:
                self.markers_refused += 1
                with _transaction(self._conn):
                    self._conn.execute(
                        "INSERT OR REPLACE INTO header (key, value) VALUES ('markers_refused', ?)",
                        (json.dumps(self.markers_refused),),
                    )
                return
            with _transaction(self._conn):
                self._conn.execute(
                    "INSERT INTO markers (at, text, source) VALUES (?, ?, ?)",
                    (epoch(at), scrub(clean(text))[:MARKER_CHARS], scrub(clean(source))[:100]),
                )
                self._write_events(events)
                self._bound(at)
            self.markers += 1
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)

    def _write_events(self, events: Sequence[Event]) -> None:
        writes, deletes = self._log.sync(events)
        if deletes:
            self._conn.executemany("DELETE FROM events WHERE seq = ?", [(s,) for s in deletes])
        if writes:
            self._conn.executemany(
                "INSERT OR REPLACE INTO events (seq, at, kind, data) VALUES (?, ?, ?, ?)",
                [(seq, epoch(ev.at), ev.kind, scrubbed_json(ev.model_dump_json())) for seq, ev in writes],
            )
            self.last_event = writes[-1][1]

    def _fail(self, exc: BaseException) -> None:
        self.error = f"{self.path}: {clean(str(exc))[:200]}"
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")
        # Said in the file too when it still takes a row (a full disk may not): `events` reads it.
        with contextlib.suppress(sqlite3.Error, OSError):
            self._conn.execute(
                "INSERT OR REPLACE INTO header (key, value) VALUES ('stopped_early', ?)",
                (json.dumps(clean(str(exc))[:200]),),
            )

    # -- bounds --------------------------------------------------------------------------------

    def used_bytes(self) -> int:
        """Bytes of the file in use (free pages are reused before the file grows)."""
        pages = int(self._conn.execute("PRAGMA page_count").fetchone()[0])
        free = int(self._conn.execute("PRAGMA freelist_count").fetchone()[0])
        return (pages - free) * self._page_size

    def file_bytes(self) -> int:
        """The file's size on disk, with its write-ahead log."""
        size = 0
        for p in (self.path, Path(f"{self.path}-wal")):
            with contextlib.suppress(OSError):
                size += p.stat().st_size
        return size

    def _bound(self, newest: datetime) -> None:
        if self.limit.max_age_s is not None:
            cutoff = epoch(newest) - self.limit.max_age_s
            row = self._conn.execute(
                "SELECT count(*), max(taken_at) FROM snapshots WHERE taken_at < ?", (cutoff,)
            ).fetchone()
            if row[0]:
                self._conn.execute("DELETE FROM snapshots WHERE taken_at < ?", (cutoff,))
                self._note_thinned(int(row[0]), float(row[1]))
        if self.limit.max_bytes is not None:
            for _ in range(THIN_ROUNDS):
                if self.used_bytes() <= self.limit.max_bytes or not self._thin_once():
                    break

    def _thin_once(self) -> bool:
        # Every other snapshot of the oldest half goes; the newest half keeps its full resolution,
        # so repeated thinning leaves the distant past ever sparser. Events and markers stay.
        count = int(self._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0])
        if count < MIN_KEPT:
            return False
        rows = self._conn.execute(
            "SELECT id, taken_at FROM snapshots ORDER BY taken_at, id LIMIT ?", (count // 2,)
        ).fetchall()
        doomed = rows[1::2]
        if not doomed:
            return False
        self._conn.executemany("DELETE FROM snapshots WHERE id = ?", [(r[0],) for r in doomed])
        self._note_thinned(len(doomed), float(doomed[-1][1]))
        return True

    def _note_thinned(self, count: int, until: float) -> None:
        self.thinned += count
        old = self._conn.execute("SELECT value FROM header WHERE key = 'thinned_until'").fetchone()
        until = max(until, json.loads(old[0])) if old else until
        self._conn.executemany(
            "INSERT OR REPLACE INTO header (key, value) VALUES (?, ?)",
            [("thinned_until", json.dumps(until)), ("snapshots_thinned", json.dumps(self.thinned))],
        )

    # -- the end -------------------------------------------------------------------------------

    def close(self) -> None:
        """Note the end time and close (the write-ahead log is folded into the file)."""
        if self._closed:
            return
        self._closed = True
        conn = self._conn
        with contextlib.suppress(sqlite3.Error):
            if self.error is None:
                with _transaction(conn):
                    conn.execute(
                        "INSERT OR REPLACE INTO header (key, value) VALUES ('ended_at', ?)",
                        (json.dumps(self._clock().isoformat()),),
                    )
                # A finished recording is one self-contained file: readers (opened read-only)
                # then leave no -wal/-shm beside it. Busy while a replay reads it: stays WAL.
                conn.execute("PRAGMA journal_mode=DELETE")
            conn.close()


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
