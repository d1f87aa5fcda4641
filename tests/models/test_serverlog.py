"""The server's log parsed in its three formats; times trusted only with a zone this code can read."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pgtop_ha.judge.serverlog import log_findings, news_level
from pgtop_ha.models.serverlog import (
    MAX_FATAL_RUNS,
    MAX_MESSAGE,
    LogLine,
    ServerLog,
    fold_fatals,
    parse_chunk,
    parse_line,
    parse_time,
)
from pgtop_ha.models.thresholds import Level
from tests.models.builders import healthy, node

AT = datetime(2026, 11, 29, 13, 46, 45, 981000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2026-11-29 13:46:45.981 GMT [1] LOG:  x", AT),
        ("2026-11-29 13:46:45.981 UTC", AT),
        ("2026-11-29 14:46:45.981 +01", AT.astimezone(timezone(timedelta(hours=1)))),
        ("2026-11-29 13:46:45.981 CET", None),  # an abbreviation is no offset to trust
        ("[1] LOG:  no time in the prefix", None),
    ],
)
def test_a_time_is_read_only_with_a_zone_it_can_trust(text: str, want: datetime | None) -> None:
    assert parse_time(text) == want


def test_stderr_jsonlog_and_csvlog_give_the_same_entry() -> None:
    stderr = '2026-11-29 13:46:45.981 GMT [12040] FATAL:  invalid connection option "sslnegotiation"'
    doc = {"timestamp": "2026-11-29 13:46:45.981 GMT", "pid": 12040, "error_severity": "FATAL",
           "message": 'invalid connection option "sslnegotiation"'}  # fmt: skip
    csvlog = (
        '2026-11-29 13:46:45.981 GMT,"rep","",12040,"127.0.0.1:5",6,1,"",2026-11-29 13:46:45 GMT,,0,FATAL,'
        '08P01,"invalid connection option ""sslnegotiation""",,,,,,,,"","walreceiver",,0'
    )
    want = LogLine(at=AT, pid=12040, severity="FATAL", message='invalid connection option "sslnegotiation"')
    assert parse_line(stderr, "stderr") == want
    assert parse_line(json.dumps(doc), "jsonlog") == want
    assert parse_line(csvlog, "csvlog") == want


def test_continuations_and_garbage_are_no_entries_and_messages_are_bounded() -> None:
    text = "2026-11-29 13:46:45.981 GMT [1] STATEMENT:  select 1\n\tfrom t\n{not json\n"
    assert [x.severity for x in parse_chunk(text, "stderr")] == ["STATEMENT"]
    assert parse_chunk('{"a": [1]}\n[1, 2]\nnot json\n', "jsonlog")[0].message == ""
    long = parse_line("[1] ERROR:  " + "x" * 5000, "stderr")
    assert long is not None and len(long.message) == MAX_MESSAGE and long.message.endswith("…")


def test_news_is_errors_and_the_servers_own_story() -> None:
    def level(severity: str, message: str) -> Level | None:
        return news_level(LogLine(severity=severity, message=message))

    assert level("PANIC", "could not write to file") == Level.CRIT
    assert level("FATAL", "terminating connection due to administrator command") == Level.WARN
    assert level("LOG", "checkpoint complete: wrote 3 buffers") == Level.OK
    assert level("LOG", "received promote request") == Level.OK
    assert level("LOG", "connection received: host=127.0.0.1") is None


def test_a_recent_panic_is_critical() -> None:
    panic = LogLine(at=AT, severity="PANIC", message="could not write to file")
    snap = node(healthy(), "node1", server_log=ServerLog(last_panic=panic))
    n = snap.node("node1")
    assert n is not None
    (mark,) = log_findings(n, AT + timedelta(seconds=30))
    assert (mark.rule, mark.level) == ("log.panic", Level.CRIT)
    assert mark.text == "PANIC at 13:46:45: could not write to file"
    assert log_findings(n, AT + timedelta(minutes=6)) == ()


def _fatals(*seconds: float, message: str) -> ServerLog:
    lines = tuple(LogLine(at=AT + timedelta(seconds=s), severity="FATAL", message=message) for s in seconds)
    return ServerLog(fatal_runs=tuple(fold_fatals({}, lines).values()))


def test_a_failovers_fatals_are_events_not_a_verdict() -> None:
    # "the database system is starting up" for a few seconds while Patroni restarts it.
    burst = _fatals(0, 0.5, 1, 2, 4, message="the database system is starting up")
    n = node(healthy(), "node1", server_log=burst).node("node1")
    assert n is not None and log_findings(n, AT + timedelta(seconds=10)) == ()


def test_a_fatal_that_keeps_coming_warns_until_it_stops() -> None:
    # The walreceiver of a replica that cannot follow: a FATAL every 5 s, its pid in each.
    lines = tuple(
        LogLine(at=AT + timedelta(seconds=5 * i), severity="FATAL", message=f"invalid option (pid {900 + i})")
        for i in range(20)
    )
    runs = fold_fatals({}, lines)
    assert [(r.count, r.message) for r in runs.values()] == [(20, "invalid option (pid 919)")]
    n = node(healthy(), "node1", server_log=ServerLog(fatal_runs=tuple(runs.values()))).node("node1")
    assert n is not None
    (mark,) = log_findings(n, AT + timedelta(seconds=100))
    assert (mark.rule, mark.level) == ("log.fatal", Level.WARN)
    assert mark.text == "FATAL again and again since 13:46:45: invalid option (pid 919)"
    assert log_findings(n, AT + timedelta(seconds=95 + 59)) != ()
    assert log_findings(n, AT + timedelta(seconds=95 + 61)) == ()  # no more for a minute: it stopped


def test_the_same_fatal_after_a_quiet_spell_starts_a_new_run() -> None:
    lines = tuple(
        LogLine(at=AT + timedelta(seconds=s), severity="FATAL", message="password authentication failed")
        for s in (0, 30, 60, 500, 510)
    )
    (run,) = fold_fatals({}, lines).values()
    assert (run.first_at, run.count) == (AT + timedelta(seconds=500), 2)


def test_fatal_runs_are_bounded() -> None:
    lines = tuple(LogLine(at=AT, severity="FATAL", message=f"role {'x' * (i + 1)}") for i in range(100))
    assert len(fold_fatals({}, lines)) == MAX_FATAL_RUNS
