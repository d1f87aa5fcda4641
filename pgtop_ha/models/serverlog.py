"""The server's own log as the console tails it: parsed lines, new ones per read (no I/O)."""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime, timedelta, timezone

from pgtop_ha.models.base import Frozen

LogFormat = str  # "jsonlog", "csvlog" or "stderr", as pg_current_logfile() names them
MAX_MESSAGE = 500  # characters of a line's message kept (a statement can be megabytes)
SEVERITIES = (
    "DEBUG5", "DEBUG4", "DEBUG3", "DEBUG2", "DEBUG1", "LOG", "INFO", "NOTICE", "WARNING", "ERROR",
    "FATAL", "PANIC", "DETAIL", "HINT", "CONTEXT", "STATEMENT", "QUERY", "LOCATION",
)  # fmt: skip


class LogLine(Frozen):
    """One entry of the server's log: when the server wrote it (when known), its pid and severity."""

    at: datetime | None = None  # None where the line's time zone or prefix cannot be read
    pid: int | None = None
    severity: str | None = None
    message: str


class FatalRun(Frozen):
    """One FATAL message coming again and again: when first and last seen, and how often."""

    message: str  # as last written
    first_at: datetime
    last_at: datetime
    count: int


MAX_FATAL_RUNS = 32  # distinct FATAL messages followed per member (the oldest forgotten first)
FATAL_GAP_S = 60.0  # the same FATAL again within this is the same run; later, a new one


def fatal_key(message: str) -> str:
    """The message with its numbers out: the same failure at another pid or port is the same."""
    return re.sub(r"\d+", "N", message)[:200]


def fold_fatals(runs: dict[str, FatalRun], lines: tuple[LogLine, ...]) -> dict[str, FatalRun]:
    """``runs`` with the FATAL ``lines`` (those with a time) counted in, bounded to MAX_FATAL_RUNS."""
    out = dict(runs)
    for line in lines:
        if line.severity != "FATAL" or line.at is None:
            continue
        key = fatal_key(line.message)
        run = out.pop(key, None)  # re-inserted: the dict stays ordered by last seen
        fresh = run is None or (line.at - run.last_at).total_seconds() > FATAL_GAP_S
        first, count = (line.at, 1) if run is None or fresh else (run.first_at, run.count + 1)
        out[key] = FatalRun(message=line.message, first_at=first, last_at=line.at, count=count)
        while len(out) > MAX_FATAL_RUNS:
            del out[next(iter(out))]
    return out


class ServerLog(Frozen):
    """What one read of a node's log gave: the file, the lines new since the read before."""

    file: str | None = None
    format: LogFormat = "stderr"
    lines: tuple[LogLine, ...] = ()  # new since the last read, oldest first
    backlog: bool = False  # the first read: lines written before the console looked (no events)
    skipped_bytes: int = 0  # past the per-read bound: not read, counted
    fatal_runs: tuple[FatalRun, ...] = ()  # FATAL messages seen since the console started, newest last
    last_panic: LogLine | None = None


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: ([A-Za-z]+|[+-]\d\d(?::?\d\d)?))?")
_SEVERITY = re.compile(r"\b(" + "|".join(SEVERITIES) + r"):  ")
_PID = re.compile(r"\[(\d+)\]")


def parse_time(text: str) -> datetime | None:
    """A log line's time ("2026-11-29 13:46:45.981 GMT"); None for a zone named other than UTC."""
    m = _STAMP.match(text)
    if m is None:
        return None
    try:
        naive = datetime.fromisoformat(m[1])
    except ValueError:
        return None
    zone = m[2]
    if zone in ("UTC", "GMT", "Z"):
        return naive.replace(tzinfo=UTC)
    if zone and zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
        offset = timedelta(hours=hours, minutes=minutes) * (1 if zone[0] == "+" else -1)
        return naive.replace(tzinfo=timezone(offset))
    return None  # "CET", "EST": an abbreviation is no offset this code may trust


def _bounded(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def parse_line(text: str, fmt: LogFormat) -> LogLine | None:
    """One line of ``fmt``; None for what is no entry (a continuation, a bad record)."""
    if fmt == "jsonlog":
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        stamp = doc.get("timestamp")
        return LogLine(
            at=parse_time(stamp) if isinstance(stamp, str) else None,
            pid=_int(doc.get("pid")),
            severity=str(doc.get("error_severity") or "") or None,
            message=_bounded(str(doc.get("message") or "")),
        )
    if fmt == "csvlog":
        try:
            row = next(csv.reader([text]))
        except (csv.Error, StopIteration):
            return None
        if len(row) < 14:
            return None
        return LogLine(
            at=parse_time(row[0]), pid=_int(row[3]), severity=row[11] or None, message=_bounded(row[13])
        )
    m = _SEVERITY.search(text)
    if m is None:
        return None  # a continuation line (a multi-line statement): no entry of its own
    pid = _PID.search(text[: m.start()])
    return LogLine(
        at=parse_time(text),
        pid=int(pid[1]) if pid else None,
        severity=m[1],
        message=_bounded(text[m.end() :]),
    )


def parse_chunk(text: str, fmt: LogFormat) -> list[LogLine]:
    """Every entry of complete lines of ``fmt`` (the caller keeps a cut last line for later)."""
    return [line for raw in text.splitlines() if raw.strip() and (line := parse_line(raw, fmt)) is not None]
