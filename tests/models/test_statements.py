"""Statement rates between two reads of pg_stat_statements: only what ran, busiest first."""

from __future__ import annotations

import pytest

from pgtop_ha.models.statements import StatementCounters, rates
from pgtop_ha.ui.panes.statements import mean


def _c(
    queryid: int, calls: int, total_ms: float, rows: int = 0, read: int = 0, hit: int = 0
) -> StatementCounters:
    return StatementCounters(
        queryid=queryid,
        dbid=5,
        userid=10,
        calls=calls,
        total_ms=total_ms,
        rows=rows,
        blks_hit=hit,
        blks_read=read,
    )


def test_rates_over_the_interval_busiest_first() -> None:
    before = [_c(1, 100, 1000.0, rows=100), _c(2, 10, 50_000.0, read=10), _c(3, 5, 10.0)]
    after = [_c(1, 300, 1400.0, rows=300), _c(2, 11, 60_000.0, read=2010), _c(3, 5, 10.0), _c(4, 1, 9.0)]
    got = [(c.queryid, r) for c, r in rates(before, after, 10.0)]
    assert [q for q, _ in got] == [2, 1]  # 3 did not run; 4 has no base read yet
    two = got[0][1]
    assert (two.calls_s, two.time_ms_s, two.mean_ms, two.blks_read_s) == (0.1, 1000.0, 10_000.0, 200.0)
    one = got[1][1]
    assert (one.calls_s, one.rows_s, one.mean_ms) == (20.0, 20.0, 2.0)


def test_counters_that_went_back_are_no_rate() -> None:
    # pg_stat_statements_reset() or an entry evicted and back: no negative rate, no rate at all.
    assert rates([_c(1, 100, 1000.0)], [_c(1, 3, 30.0)], 10.0) == []
    assert rates([_c(1, 1, 1.0)], [_c(1, 2, 2.0)], 0.0) == []


@pytest.mark.parametrize(
    ("ms", "text"), [(0.365, "0.36ms"), (12.4, "12ms"), (1400.0, "1.4s"), (None, "-"), (float("nan"), "?")]
)
def test_a_mean_keeps_its_digits(ms: float | None, text: str) -> None:
    assert mean(ms) == text
