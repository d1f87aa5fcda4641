"""Tailing a real server's log: a steady read is one statement; a shrunk file and a flood are read right."""

from __future__ import annotations

import asyncio
import os
import secrets as token
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from pgtop_ha.collect.serverlog import LOCATE_SQL, MAX_LOG_BYTES, LogTail
from pgtop_ha.lab import secrets
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, MONITOR_USER
from pgtop_ha.models.serverlog import ServerLog

pytestmark = pytest.mark.lab


class Counted:
    """The monitor's real connection, counting the statements sent through it."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.sent: list[str] = []

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.sent.append(sql)
        return await self.conn.fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self.sent.append(sql)
        return await self.conn.fetchval(sql, *args)


@pytest.fixture
async def monitor(lab: Lab) -> AsyncIterator[Counted]:
    i = lab.leader_index()
    conn = await asyncpg.connect(
        host="127.0.0.1",
        port=lab.layout.pg_port(i),
        user=MONITOR_USER,
        password=secrets.ensure(lab.layout)[MONITOR_USER],
        database=DBNAME,
    )
    try:
        yield Counted(conn)
    finally:
        await conn.close()


def _say(lab: Lab, text: str, times: int = 1) -> None:
    """Have the leader write ``text`` to its log as a WARNING, ``times`` times over."""
    lab.psql(
        f"do $$ begin for i in 1..{times} loop raise warning '{text}'; end loop; end $$",
        lab.leader_index(),
        options="-c client_min_messages=error",
    )


async def _read_until(tail: LogTail, conn: Counted, text: str, within_s: float = 15) -> list[ServerLog]:
    """Read the log until a line holds ``text`` (the collector writes it a moment after)."""
    reads: list[ServerLog] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        reads.append(await tail(conn, LOCATE_SQL))
        if any(text in line.message for line in reads[-1].lines):
            return reads
        await asyncio.sleep(0.05)
    raise AssertionError(f"{text!r} not in the log within {within_s} s ({len(reads)} reads)")


async def test_a_steady_read_is_one_statement(lab: Lab, monitor: Counted) -> None:
    tail = LogTail()
    first = await tail(monitor, LOCATE_SQL)
    assert first.backlog and first.file
    marker = f"steady {token.token_hex(4)}"
    _say(lab, marker)
    monitor.sent.clear()
    reads = await _read_until(tail, monitor, marker)
    assert monitor.sent == [LOCATE_SQL] * len(reads)
    assert not any(r.backlog or r.skipped_bytes for r in reads)
    said = [line for r in reads for line in r.lines if marker in line.message]
    assert [line.severity for line in said] == ["WARNING"]  # read once, whole


# A byte changed before the offset, with nothing new, sends the read to size the file and leaves no
# byte to compare: the reads after it must size the file too, or the truncation goes unseen.
@pytest.mark.parametrize("changed_byte", [False, True], ids=["truncated", "byte-changed-then-truncated"])
async def test_a_shrunk_file_is_read_from_its_start(lab: Lab, monitor: Counted, changed_byte: bool) -> None:
    tail = LogTail()
    first = await tail(monitor, LOCATE_SQL)
    assert first.file
    before = f"before {token.token_hex(4)}"
    _say(lab, before)
    await _read_until(tail, monitor, before)
    if changed_byte:
        fd = os.open(first.file, os.O_WRONLY)
        try:
            os.pwrite(fd, b"#", os.fstat(fd).st_size - 1)  # the newline ending the last line read
        finally:
            os.close(fd)
        await tail(monitor, LOCATE_SQL)
    os.truncate(first.file, 0)  # not the collector's doing: a tool outside PostgreSQL
    after = f"after {token.token_hex(4)}"
    _say(lab, after)
    reads = await _read_until(tail, monitor, after)
    line = next(line for line in reads[-1].lines if after in line.message)
    assert line.severity == "WARNING"  # a whole line, read from the file's new start
    assert not any(r.skipped_bytes for r in reads)


async def test_a_flood_is_skipped_to_its_newest_part(lab: Lab, monitor: Counted) -> None:
    tail = LogTail()
    await tail(monitor, LOCATE_SQL)
    filler = "x" * 200
    _say(lab, filler, times=2 * MAX_LOG_BYTES // 200)
    last = f"last {token.token_hex(4)}"
    _say(lab, last)
    reads = await _read_until(tail, monitor, last)
    assert sum(r.skipped_bytes for r in reads) > 0
    for r in reads:
        assert sum(len(line.message) for line in r.lines) <= MAX_LOG_BYTES
