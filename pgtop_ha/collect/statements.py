"""Top statements: pg_stat_statements read on a slow cadence, rates from the read before."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import asyncpg

from pgtop_ha.models.statements import (
    TOP_STATEMENTS,
    StatementCounters,
    Statements,
    rates,
)

STATEMENTS_REFRESH_S = 10.0  # while the Statements pane is on screen


class StatementsReader:
    """Keeps the last read's counters; each read gives the rates since then (none on the first)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """Start with no base read."""
        self.texts_sql: str | None = None
        self._clock = clock
        self._before: Sequence[StatementCounters] = ()
        self._at: float | None = None

    def forget(self) -> None:
        """Drop the base read (a new connection may be another server, or counters reset)."""
        self._before, self._at = (), None

    async def __call__(self, conn: asyncpg.Connection, sql: str) -> Statements:
        """Read the counters, then the texts of the busiest few."""
        now = self._clock()
        after = [StatementCounters.model_validate(dict(r)) for r in await conn.fetch(sql)]
        before, at = self._before, self._at
        self._before, self._at = after, now
        if at is None:
            return Statements(entries=len(after))
        over = now - at
        ranked = rates(before, after, over)[:TOP_STATEMENTS]
        reset = sum(c.calls for c in after) < sum(c.calls for c in before)
        if not ranked or self.texts_sql is None:
            return Statements(over_s=over, entries=len(after), reset=reset)
        texts = {
            (r["queryid"], r["dbid"], r["userid"]): r
            for r in await conn.fetch(self.texts_sql, [c.queryid for c, _ in ranked])
        }
        top = []
        for c, rate in ranked:
            row = texts.get((c.queryid, c.dbid, c.userid))
            if row is not None:
                rate = rate.model_copy(
                    update={"datname": row["datname"], "usename": row["rolname"], "query": row["query"]}
                )
            top.append(rate)
        return Statements(over_s=over, entries=len(after), top=tuple(top), reset=reset)
