"""Reading a recording back: header, snapshots by time (indexed seeks), events and markers.

A recording is untrusted input (it may come from anyone): rows are inflated up to a bound,
every string is cleaned of control characters, and a damaged file is a one-line error.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pgtop_ha.errors import UserError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.scrub import clean_tree, cleaned_json, needs_cleaning
from pgtop_ha.record.store import FORMAT, FORMAT_VERSION, connect, from_epoch, inflate


@dataclass(frozen=True, order=True)
class Frame:
    """One stored snapshot's place: its time (epoch seconds) and row id, in replay order."""

    taken_at: float
    id: int

    @property
    def when(self) -> datetime:
        """The time as an aware UTC datetime."""
        return from_epoch(self.taken_at)


@dataclass(frozen=True)
class Marker:
    """A stored marker."""

    at: datetime
    text: str
    source: str


def _not_recording(path: Path, why: str) -> UserError:
    return UserError(f"{path} is not a pgtop-ha recording ({why}); give a file made by `pgtop-ha record`")


# A snapshot row whose time can be read: a number of seconds between 1970 and 9999, with data.
USABLE = (
    "typeof(taken_at) IN ('integer', 'real') AND taken_at BETWEEN 0 AND 253402300799 AND data IS NOT NULL"
)


def event_of(row: dict[str, Any]) -> Event | None:
    """An event written by any pgtop-ha, its fields this one does not know dropped; None if unreadable."""
    try:
        return Event.model_validate({k: v for k, v in row.items() if k in Event.model_fields})
    except (ValidationError, ValueError):
        return None


class Recording:
    """An open recording, read-only."""

    def __init__(self, path: Path, conn: sqlite3.Connection, header: dict[str, Any]) -> None:
        self.path = path
        self._conn = conn
        self.header = header
        self._skipped: set[tuple[str, object]] = set()  # (table, row id) of rows that could not be read

    @classmethod
    def open(cls, path: Path) -> Recording:
        """Open ``path`` read-only; UserError when it is missing or not a recording."""
        if not path.is_file():
            raise UserError(f"{path}: no such recording; give the FILE written by `pgtop-ha record FILE`")
        try:
            conn = connect(path, read_only=True)
            rows = conn.execute("SELECT key, value FROM header").fetchall()
        except sqlite3.Error as exc:
            raise _not_recording(path, str(exc)) from None
        header: dict[str, Any] = {}
        for key, value in rows:
            with contextlib.suppress(ValueError, TypeError):
                header[str(key)] = clean_tree(json.loads(value))
        if header.get("format") != FORMAT:
            conn.close()
            raise _not_recording(path, "no pgtop-ha header")
        version = header.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            conn.close()
            by = header.get("pgtop_ha_version", "?")
            raise UserError(f"{path} was written by a newer pgtop-ha ({by}); upgrade pgtop-ha to read it")
        return cls(path, conn, header)

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot read the recording ({exc})") from None

    def _frame(self, sql: str, args: tuple[Any, ...] = ()) -> Frame | None:
        rows = self._query(sql, args)
        return Frame(float(rows[0][0]), int(rows[0][1])) if rows else None

    def _note_skipped(self, table: str, row: object) -> None:
        self._skipped.add((table, row))

    @property
    def skipped(self) -> int:
        """Rows read so far that could not be used (a damaged or hostile file), each counted once."""
        return len(self._skipped)

    # -- frames (every seek is an indexed range scan on taken_at) ------------------------------

    def count(self) -> int:
        """Snapshots stored."""
        return int(self._query(f"SELECT count(*) FROM snapshots WHERE {USABLE}")[0][0])

    def first(self) -> Frame | None:
        """The oldest snapshot."""
        return self._frame(f"SELECT taken_at, id FROM snapshots WHERE {USABLE} ORDER BY taken_at, id LIMIT 1")

    def last(self) -> Frame | None:
        """The newest snapshot."""
        return self._frame(
            f"SELECT taken_at, id FROM snapshots WHERE {USABLE} ORDER BY taken_at DESC, id DESC LIMIT 1"
        )

    def at_or_before(self, taken_at: float) -> Frame | None:
        """The last snapshot taken at or before ``taken_at`` (epoch seconds)."""
        return self._frame(
            f"SELECT taken_at, id FROM snapshots WHERE {USABLE} AND taken_at <= ? "
            "ORDER BY taken_at DESC, id DESC LIMIT 1",
            (taken_at,),
        )

    def at_or_after(self, taken_at: float) -> Frame | None:
        """The first snapshot taken at or after ``taken_at``."""
        return self._frame(
            f"SELECT taken_at, id FROM snapshots WHERE {USABLE} AND taken_at >= ? "
            "ORDER BY taken_at, id LIMIT 1",
            (taken_at,),
        )

    def after(self, frame: Frame) -> Frame | None:
        """The snapshot after ``frame``."""
        return self._frame(
            f"SELECT taken_at, id FROM snapshots WHERE {USABLE} AND (taken_at, id) > (?, ?) "
            "ORDER BY taken_at, id LIMIT 1",
            (frame.taken_at, frame.id),
        )

    def before(self, frame: Frame, n: int = 1) -> list[Frame]:
        """Up to ``n`` snapshots before ``frame``, oldest first."""
        rows = self._query(
            f"SELECT taken_at, id FROM snapshots WHERE {USABLE} AND (taken_at, id) < (?, ?) "
            "ORDER BY taken_at DESC, id DESC LIMIT ?",
            (frame.taken_at, frame.id, n),
        )
        return [Frame(float(r[0]), int(r[1])) for r in reversed(rows)]

    def position(self, frame: Frame) -> int:
        """How many snapshots come before ``frame`` (its 0-based index)."""
        rows = self._query(
            f"SELECT count(*) FROM snapshots WHERE {USABLE} AND (taken_at, id) < (?, ?)",
            (frame.taken_at, frame.id),
        )
        return int(rows[0][0])

    # -- contents ------------------------------------------------------------------------------

    def snapshot(self, frame: Frame) -> ClusterSnapshot:
        """The snapshot stored at ``frame``."""
        rows = self._query("SELECT data FROM snapshots WHERE id = ?", (frame.id,))
        if not rows:
            raise UserError(f"{self.path}: the snapshot of {frame.when:%H:%M:%S} is gone (thinned meanwhile)")
        return self._decode(rows[0][0], frame)

    def readable(self, frame: Frame) -> ClusterSnapshot | None:
        """The snapshot stored at ``frame``, or None (counted in ``skipped``) when it cannot be read."""
        try:
            return self.snapshot(frame)
        except UserError:
            self._note_skipped("snapshots", frame.id)
            return None

    def snapshots(self) -> Iterator[ClusterSnapshot]:
        """Every snapshot, oldest first (streamed, not all in memory)."""
        for (row,) in self._query(f"SELECT id FROM snapshots WHERE NOT ({USABLE})"):
            self._note_skipped("snapshots", row)  # no time to place it at, or no data
        frame = self.first()
        while frame is not None:
            rows = self._query(
                f"SELECT taken_at, id, data FROM snapshots WHERE {USABLE} AND (taken_at, id) >= (?, ?) "
                "ORDER BY taken_at, id LIMIT 200",
                (frame.taken_at, frame.id),
            )
            for taken_at, row_id, data in rows:
                try:
                    snap = self._decode(data, Frame(float(taken_at), int(row_id)))
                except UserError:
                    self._note_skipped("snapshots", row_id)  # a damaged row: the others still tell the story
                    continue
                yield snap
            frame = None
            if len(rows) == 200:
                last = rows[-1]
                frame = self.after(Frame(float(last[0]), int(last[1])))

    def _decode(self, blob: object, frame: Frame) -> ClusterSnapshot:
        if not isinstance(blob, bytes):
            raise UserError(f"{self.path}: the snapshot of {frame.when:%H:%M:%S} holds no data")
        text = inflate(blob, str(self.path))
        try:
            if needs_cleaning(text):
                return ClusterSnapshot.model_validate(clean_tree(json.loads(text)))
            return ClusterSnapshot.model_validate_json(text)
        except RecursionError:
            raise UserError(f"{self.path}: the snapshot of {frame.when:%H:%M:%S} nests too deep") from None
        except (ValidationError, ValueError) as exc:
            by = self.header.get("pgtop_ha_version", "?")
            first = str(exc).splitlines()[0][:120]
            raise UserError(
                f"{self.path}: the snapshot of {frame.when:%H:%M:%S} does not fit this pgtop-ha "
                f"(recorded by {by}: {first}); use the same or a newer pgtop-ha"
            ) from None

    def event_rows(self) -> list[dict[str, Any]]:
        """Every recorded event as stored (newer fields included), in time order."""
        return [row for _, row in self._event_rows()]

    def _event_rows(self) -> list[tuple[int, dict[str, Any]]]:
        out = []
        for seq, data in self._query("SELECT seq, data FROM events ORDER BY at, seq"):
            try:
                value = cleaned_json(data) if isinstance(data, str) else None
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict) and _time_ok(value.get("at")):
                out.append((seq, value))
            else:
                self._note_skipped("events", seq)
        return out

    def events(self) -> list[Event]:
        """Every recorded event this pgtop-ha understands (unknown fields dropped), in time order."""
        out = []
        for seq, row in self._event_rows():
            event = event_of(row)
            if event is None:
                self._note_skipped("events", seq)
            else:
                out.append(event)
        return out

    def markers(self) -> list[Marker]:
        """Every recorded marker, in time order."""
        rows = self._query("SELECT id, at, text, source FROM markers ORDER BY at, id")
        out = []
        for row, at, text, source in rows:
            when = _epoch(at)
            if when is None or not isinstance(text, str):
                self._note_skipped("markers", row)
                continue
            out.append(Marker(when, clean_tree(text), clean_tree(str(source))))
        return out


def _epoch(value: object) -> datetime | None:
    """A stored epoch time as a datetime; None when it is no number or out of range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return from_epoch(float(value))
    except (ValueError, OverflowError, OSError):
        return None


def _time_ok(value: object) -> bool:
    """Whether an event's stored time reads as a time."""
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True
