"""Slow is not unreachable: a source still inside its own time limit keeps its last answer.

Times are scaled by 10 from the issue's figures (a 1.5 s answer, a 3 s limit, a 1 s cycle) so the
tests stay short; the fetches' sleeps stand for a slow server, they synchronise nothing.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.collect.source import PollTask, Source
from pgtop_ha.models.serverlog import LogLine, ServerLog
from pgtop_ha.models.snapshot import NodeSnapshot
from pgtop_ha.models.sources import node_state, source_state
from pgtop_ha.settings import PostgresSettings
from tests.support.clocks import fixed_clock

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
SCALE = 0.1
CYCLE_BUDGET = 1.0 * SCALE
LIMIT = 3.0 * SCALE
# uvloop's clock counts whole milliseconds: its timer may end a wait a hair before its budget.
CLOCK_SLACK = 0.001


def _source(delays: list[float]) -> Source[int]:
    answers = iter(range(1, 100))
    waits = iter(delays)

    async def fetch() -> int:
        await asyncio.sleep(next(waits))  # the server taking its time
        return next(answers)

    return Source(
        "patroni http://127.0.0.1:1/patroni", fetch, LIMIT, fixed_clock(NOW), lambda e: f"failed: {e!r}"
    )


async def _cycle(source: Source[int]) -> None:
    """What one poller cycle does: start the poll, wait for it at most the cycle's budget."""
    await asyncio.wait({source.start()}, timeout=CYCLE_BUDGET)


async def test_slow_answer_keeps_the_last_value_and_is_used_when_it_comes() -> None:
    source = _source([0.0, 1.5 * SCALE])
    await _cycle(source)
    assert source.reading().value == 1 and source.reading().slow_s is None
    await _cycle(source)  # this poll takes 1.5 cycles: the cycle ends before it answers
    slow = source.reading()
    assert slow.value == 1 and slow.error is None and slow.last_ok_at == NOW
    assert slow.slow_s is not None and slow.slow_s >= CYCLE_BUDGET - CLOCK_SLACK
    # The next cycle waits for the same poll (no second request) and uses its answer.
    await _cycle(source)
    fresh = source.reading()
    assert fresh.value == 2 and fresh.error is None and fresh.slow_s is None
    await source.aclose()


async def test_an_expired_limit_is_unreachable() -> None:
    source = _source([0.0, 10.0])
    await _cycle(source)
    await _cycle(source)
    assert source.reading().value == 1 and source.reading().error is None  # still inside its limit
    deadline = asyncio.get_running_loop().time() + 5
    while source.reading().error is None:
        assert asyncio.get_running_loop().time() < deadline, "the limit never fired"
        await asyncio.wait({source.start()}, timeout=CYCLE_BUDGET)
    gone = source.reading()
    assert gone.value is None and gone.slow_s is None and "TimeoutError" in (gone.error or "")
    assert gone.last_ok_at == NOW
    await source.aclose()


async def test_a_refused_connection_is_unreachable_at_once() -> None:
    async def fetch() -> int:
        raise ConnectionRefusedError("refused")

    source = Source("x", fetch, LIMIT, fixed_clock(NOW), lambda e: f"refused: {e}")
    await _cycle(source)
    r = source.reading()
    assert r.value is None and r.error == "refused: refused" and r.slow_s is None
    assert source_state(r.value is not None, r.slow_s) == "unreachable"


async def test_first_poll_still_running_is_pending() -> None:
    source = _source([1.5 * SCALE])
    await _cycle(source)
    r = source.reading()
    assert r.value is None and r.slow_s is not None and "no answer yet" in (r.error or "")
    assert source_state(r.value is not None, r.slow_s) == "pending"
    await source.aclose()


async def test_node_reader_slow_keeps_its_last_answer(tmp_path: Path) -> None:
    reader = NodeReader(
        Target("node1", "127.0.0.1", 1, "postgres"), PostgresSettings(), fixed_clock(NOW), proc=tmp_path
    )
    release = asyncio.Event()

    async def slow_poll() -> None:
        await release.wait()

    answered = NodeSnapshot(name="node1", reachable=True, last_ok_at=NOW, in_recovery=False, timeline=3)
    reader._result = answered  # what the last poll answered
    reader.last_ok_at = NOW
    reader._runner = PollTask("pg:node1", slow_poll)
    task = reader.start()
    await asyncio.wait({task}, timeout=CYCLE_BUDGET)
    view = reader.view()
    assert view.reachable and view.error is None and view.timeline == 3 and view.in_recovery is False
    assert view.slow_s is not None and view.slow_s >= CYCLE_BUDGET - CLOCK_SLACK
    assert node_state(view.model_copy(update={"slow_s": 1.5})) == "slow"
    release.set()
    await task
    assert reader.view() is answered
    # A failed last poll stays unreachable while a retry runs.
    reader._result = NodeSnapshot(name="node1", error="connection refused", last_ok_at=NOW)
    reader._failures = 1
    release.clear()
    task = reader.start()
    await asyncio.wait({task}, timeout=CYCLE_BUDGET)
    assert not reader.view().reachable and reader.view().slow_s is None
    release.set()
    await task


def _built(reader: NodeReader) -> None:
    """A poll's end as _finish makes it: a snapshot built with the log as it stands."""
    reader._result = NodeSnapshot(
        name="node1", reachable=True, last_ok_at=NOW, server_log=reader._server_log()
    )


def _log_of(reader: NodeReader) -> tuple[str, ...]:
    log = reader.view().server_log
    return () if log is None else tuple(line.message for line in log.lines)


def test_log_lines_reach_the_first_snapshot_the_poller_takes_once(tmp_path: Path) -> None:
    # A server just restarted: a poll reads its log (the restart told), then fails, or ends after
    # its cycle's view and the next poll replaces its result. The lines go in the first snapshot
    # the poller takes, once, with whatever was read since.
    reader = NodeReader(
        Target("node1", "127.0.0.1", 1, "postgres"), PostgresSettings(), fixed_clock(NOW), proc=tmp_path
    )

    def read(*messages: str) -> None:
        lines = tuple(LogLine(at=NOW, severity="LOG", message=m) for m in messages)
        reader._log.value = ServerLog(file="/log/postgresql.json", format="jsonlog", lines=lines)

    read("database system was interrupted")
    reader._result = NodeSnapshot(name="node1", error="connection refused", last_ok_at=NOW)
    assert reader.view().server_log is None  # the poll that read it failed
    _built(reader)  # the next poll: not taken, replaced by the one after, which read more
    read("database system is ready to accept connections")
    _built(reader)
    assert _log_of(reader) == (
        "database system was interrupted",
        "database system is ready to accept connections",
    )
    assert _log_of(reader) == ()  # taken again (a slow poll's view): not told twice
    _built(reader)
    assert _log_of(reader) == () and reader.view().server_log is not None
