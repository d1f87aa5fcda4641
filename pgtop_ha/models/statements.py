"""Top statements: pg_stat_statements' counters turned into rates between two reads (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pgtop_ha.models.base import Frozen

# Statements a node's Statements section keeps: the busiest by time over the last interval.
TOP_STATEMENTS = 20
# Why a snapshot has no statements while the read works: only the cycle that read them has them.
BETWEEN_READS = "read every 10 s: this snapshot falls between two reads"


class StatementCounters(Frozen):
    """One pg_stat_statements entry's cumulative counters, as read (no text)."""

    queryid: int
    dbid: int
    userid: int
    calls: int
    total_ms: float
    rows: int
    blks_hit: int
    blks_read: int


class StatementRate(Frozen):
    """One statement's work per second between two reads, with its text and who ran it."""

    queryid: int
    datname: str | None = None
    usename: str | None = None
    calls_s: float
    time_ms_s: float  # milliseconds of execution per second of wall time: 1000 is one core busy
    rows_s: float
    mean_ms: float | None = None  # mean execution time of the calls in the interval
    blks_read_s: float
    blks_hit_s: float
    query: str | None = None


class Statements(Frozen):
    """A node's top statements over ``over_s`` seconds; empty on the first read (no rates yet)."""

    over_s: float | None = None  # None: the first read, rates come with the next
    entries: int = 0  # pg_stat_statements entries read
    top: tuple[StatementRate, ...] = ()
    reset: bool = False  # counters went back (pg_stat_statements_reset): rates restart


def _key(c: StatementCounters) -> tuple[int, int, int]:
    return c.queryid, c.dbid, c.userid


def rates(
    before: Sequence[StatementCounters], after: Sequence[StatementCounters], over_s: float
) -> list[tuple[StatementCounters, StatementRate]]:
    """Per entry present in both reads, its rates over ``over_s``, busiest by time first."""
    if over_s <= 0:
        return []
    old: Mapping[tuple[int, int, int], StatementCounters] = {_key(c): c for c in before}
    out: list[tuple[StatementCounters, StatementRate]] = []
    for c in after:
        prev = old.get(_key(c))
        if prev is None or c.calls < prev.calls or c.calls == prev.calls:
            continue  # new (no base), evicted and back (counters restarted), or idle
        calls = c.calls - prev.calls
        ms = max(0.0, c.total_ms - prev.total_ms)
        rate = StatementRate(
            queryid=c.queryid,
            calls_s=calls / over_s,
            time_ms_s=ms / over_s,
            rows_s=max(0, c.rows - prev.rows) / over_s,
            mean_ms=ms / calls,
            blks_read_s=max(0, c.blks_read - prev.blks_read) / over_s,
            blks_hit_s=max(0, c.blks_hit - prev.blks_hit) / over_s,
        )
        out.append((c, rate))
    out.sort(key=lambda cr: -cr[1].time_ms_s)
    return out
