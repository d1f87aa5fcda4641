"""Tail each node's own log through SQL: pg_current_logfile, then the bytes after the offset.

Bounded per read: at most MAX_LOG_BYTES; a flood past that is skipped to its newest part and
counted. The first read takes the last BACKLOG_BYTES, lines written before the console looked.
"""

from __future__ import annotations

import asyncpg

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.models.serverlog import FatalRun, LogFormat, LogLine, ServerLog, fold_fatals, parse_chunk

LOG_REFRESH_S = 2.0
MAX_LOG_BYTES = 256 * 1024
BACKLOG_BYTES = 32 * 1024
FORMATS: tuple[LogFormat, ...] = ("jsonlog", "csvlog", "stderr")

# The richest format the collector writes (each pg_current_logfile() reads current_logfiles
# again) and, while that is still the file read last ($1), its bytes from $2 on. The read starts
# one byte early: an empty answer or another byte there sends the read to SIZE_SQL, as a new file
# or a flood does.
LOCATE_SQL = """
select f.path, f.format,
       case when f.path = $1 then pg_read_binary_file(f.path, $2, $3, true) end as chunk
from (select v.rank, v.format, pg_current_logfile(v.format) as path
      from (values (1, 'jsonlog'), (2, 'csvlog'), (3, 'stderr')) v(rank, format)) f
where f.path is not null order by f.rank limit 1"""
# Only for a new file, a flood or a file that shrank: it stats every file in the log directory.
SIZE_SQL = "select size from pg_ls_logdir() where name = regexp_replace($1, '^.*/', '')"
READ_SQL = "select pg_read_binary_file($1, $2, $3, true)"


class LogTail:
    """One node's place in its log: the file, the offset read to, a cut last line kept."""

    def __init__(self) -> None:
        """Start before the first read (it takes the backlog)."""
        self._file: str | None = None
        self._offset = 0
        # The byte before the offset, read again to tell the file is the same; empty when it was not
        # read (offset 0, or a re-sized file with nothing new), and then only offset 0 is trusted.
        self._last = b""
        self._carry = b""
        self._fatals: dict[str, FatalRun] = {}
        self.last_panic: LogLine | None = None

    async def __call__(self, conn: asyncpg.Connection, sql: str) -> ServerLog:
        """Read what was written since the last read (the backlog on the first)."""
        back = len(self._last)
        row = await conn.fetchrow(sql, self._file, self._offset - back, MAX_LOG_BYTES + back)
        path, fmt, ahead = (row["path"], row["format"], row["chunk"]) if row else (None, None, None)
        if path is None:
            raise ParseError("logging_collector is off: the server's log is no file the console can tail")
        if fmt not in FORMATS:
            raise ParseError(f"cannot tell the format of the log file {path}")
        if (
            path == self._file
            and (back or not self._offset)
            and isinstance(ahead, bytes)
            and ahead[:back] == self._last
            and len(ahead) - back < MAX_LOG_BYTES
        ):
            # The same file, grown by less than a read's bound: no size needed.
            return self._lines(path, fmt, b"", ahead[back:])
        size = await conn.fetchval(SIZE_SQL, path)
        if not isinstance(size, int):
            raise ParseError(f"cannot size the log file {path}")
        backlog = self._file is None
        before = b""
        if self._file is not None and path != self._file:
            # Rotated: what the old file got since the last read comes first, its last line whole.
            rest = await conn.fetchval(READ_SQL, self._file, self._offset, MAX_LOG_BYTES) or b""
            before = self._carry + rest
            if before and not before.endswith(b"\n"):
                before += b"\n"
            self._carry = b""
        start = self._offset
        if path != self._file or size < self._offset:
            # A first read takes the file's tail; a rotated (or truncated) file is read from its start.
            start = max(0, size - BACKLOG_BYTES) if backlog else 0
            self._carry = b""
        skipped = 0
        if size - start > MAX_LOG_BYTES:
            skipped, start = size - MAX_LOG_BYTES - start, size - MAX_LOG_BYTES
            self._carry = b""
        self._file, self._offset, self._last = path, start, b""
        chunk = b""
        if size > start:
            chunk = await conn.fetchval(READ_SQL, path, start, size - start) or b""
        cut = bool(skipped or (backlog and start > 0))
        return self._lines(path, fmt, before, chunk, skipped=skipped, cut=cut, backlog=backlog)

    def _lines(
        self,
        path: str,
        fmt: LogFormat,
        before: bytes,
        chunk: bytes,
        *,
        skipped: int = 0,
        cut: bool = False,
        backlog: bool = False,
    ) -> ServerLog:
        """The whole lines of ``chunk`` (read at the offset), after ``before`` (an old file's end)."""
        if chunk:
            self._offset += len(chunk)
            self._last = chunk[-1:]
        data = self._carry + chunk
        if cut and not self._carry:
            data = data.partition(b"\n")[2]  # begun mid-line: that line is not whole
        data = before + data
        complete, _, self._carry = data.rpartition(b"\n")
        if len(self._carry) > MAX_LOG_BYTES:
            self._carry = b""  # a line with no end in sight: dropped, never held without bound
        lines = tuple(parse_chunk(complete.decode("utf-8", errors="replace"), fmt))
        for line in lines:
            if line.severity == "PANIC":
                self.last_panic = line
        self._fatals = fold_fatals(self._fatals, lines)
        return ServerLog(
            file=path,
            format=fmt,
            lines=lines,
            backlog=backlog,
            skipped_bytes=skipped,
            fatal_runs=tuple(self._fatals.values()),
            last_panic=self.last_panic,
        )
