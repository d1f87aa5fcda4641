"""Fleet rows from Prometheus answers: pure parsing and derivation."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.prometheus import (
    PrometheusError,
    duration_seconds,
    parse_matrix,
    parse_scrape_interval,
    parse_vector,
)
from pgtop_ha.judge.fleet import (
    CRIT,
    OK,
    RULES,
    WARN,
    Q,
    Sample,
    Series,
    build_rows,
    counts_of,
    history_events,
    level_of,
    matches,
)
from pgtop_ha.judge.rules import LEADER_NONE, PATRONI_MEMBER_DOWN, PATRONI_SWITCHED
from pgtop_ha.ui.fleet.rows import texts
from tests.fleet.synth import FakeFleet

NOW = 1_700_000_000.0


def _rows(clusters: int = 3):  # type: ignore[no-untyped-def]
    return FakeFleet(clusters, now=NOW).rows


def test_healthy_fleet_rows() -> None:
    rows = _rows(3)
    assert [r.scope for r in rows] == ["cluster-00000", "cluster-00001", "cluster-00002"]
    r = rows[1]
    assert (r.leader, r.members_up, r.members_total, r.streaming, r.replicas) == ("node1", 3, 3, 2, 2)
    assert r.max_lag_bytes == 10_000
    assert r.timeline == 3
    assert r.writer_up == 1
    assert r.dcs_age_s == pytest.approx(2)
    assert rows[0].timeline_changes == 1 and rows[1].timeline_changes == 0
    assert r.problems == () and r.level == OK and rows[0].severity == RULES[PATRONI_SWITCHED.id].points()


def _agg(scope: str, **values: float) -> list[Sample]:
    return [Sample({"scope": scope, Q: k}, v) for k, v in values.items()]


def _members(scope: str, *names: str) -> list[Sample]:
    return [Sample({"scope": scope, "name": n, "instance": f"h:{i}"}, 1) for i, n in enumerate(names)]


def _leader(scope: str, name: str) -> Sample:
    return Sample({"scope": scope, "name": name, Q: "leader"}, 1)


def test_worst_first_and_problems() -> None:
    fleet = [_leader("a", "n1"), *_agg("a", up=2, streaming=1), *_agg("b", up=2, streaming=2)]
    members = (
        _members("a", "n1", "n2", "n3") + _members("b", "n1", "n2", "n3") + _members("c", "n1", "n2", "n3")
    )
    fleet += _agg("c", total=3)
    rows = build_rows({"fleet": fleet, "members": members}, now=NOW)
    assert [r.scope for r in rows] == ["c", "b", "a"]  # c: no leader, 3 down
    assert rows[0].members_up == 0 and rows[0].leader is None and "no leader" in rows[0].said
    assert "no leader" in rows[1].said and "1 down" in rows[1].said
    a = rows[2]
    assert (a.leader, a.members_up, a.members_total, a.replicas, a.streaming) == ("n1", 2, 3, 2, 1)
    # The replica that is down is not also "not streaming".
    assert a.said == ("1 down",) and a.level == CRIT
    assert rows[0].severity == RULES[LEADER_NONE.id].points() + RULES[PATRONI_MEMBER_DOWN.id].points(3)


def test_a_level_is_told_by_its_severity_whatever_the_counts() -> None:
    # Many replicas not streaming stay a warning; one member down is worse than any warnings.
    many = [_leader("w", "n1"), *_agg("w", total=500, up=500, streaming=0, paused=1, lag=10**12)]
    one_down = [_leader("d", "n1"), *_agg("d", total=3, up=2, streaming=1)]
    warn, crit = build_rows({"fleet": many}, now=NOW), build_rows({"fleet": one_down}, now=NOW)
    assert warn[0].level == WARN == level_of(warn[0].severity) and warn[0].severity < crit[0].severity
    assert crit[0].level == CRIT == level_of(crit[0].severity)


def test_counts_come_from_count_values() -> None:
    samples = [Sample({"level": "0"}, 9812), Sample({"level": "1"}, 150), Sample({"level": "2"}, 38)]
    counts = counts_of([*samples, Sample({"level": "x"}, 5), Sample({}, 1)])
    assert (counts.total, counts.ok, counts.warn, counts.crit) == (10_000, 9812, 150, 38)


def test_writer_not_exactly_one_and_two_leaders() -> None:
    fleet = [_leader("a", "n1"), _leader("a", "n2"), *_agg("a", up=2, streaming=0, writer=2)]
    (row,) = build_rows({"fleet": fleet, "members": _members("a", "n1", "n2")}, now=NOW)
    assert row.writer_up == 2 and "writer has 2 UP" in row.said and "2 leaders" in row.said
    assert row.leader == "n1, n2"


def test_missing_labels_tolerated() -> None:
    fleet = [
        Sample({Q: "up"}, 3),  # no scope: skipped
        Sample({"scope": "x"}, 3),  # no q: skipped
        Sample({"scope": "x", Q: "leader"}, 1),  # no name
        Sample({"scope": "x", Q: "unknown"}, 1),
        Sample({"scope": "x", Q: "up"}, -5),  # out of range: 0
    ]
    members = [Sample({"scope": "x"}, 1), Sample({}, 1), Sample({"scope": "only-in-members"}, 1)]
    body = json.dumps(
        {"status": "success", "data": {"result": [{"metric": {}, "value": [1, "1"]}, {"value": [1, "1"]}, 5]}}
    ).encode()
    assert parse_vector(body) == (Sample({}, 1.0),)
    (row,) = build_rows({"fleet": fleet, "members": members}, now=NOW)  # rows come from "fleet" alone
    assert row.scope == "x" and row.leader == "?" and row.members_up == 0
    assert row.timeline is None and row.dcs_age_s is None and row.writer_up is None
    assert texts(row)[4] == "-"


def test_hostile_values_and_labels() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "result": [
                    {
                        "metric": {"__name__": "patroni_primary", "scope": "[b]x\x1b[31m" + "y" * 500},
                        "value": [1, "1"],
                    },
                    {"metric": {"scope": "z"}, "value": [1, "NaN"]},
                    {"metric": {"scope": "z"}, "value": [1, "+Inf"]},
                    {"metric": {"scope": "z"}, "value": [1, {"a": 1}]},
                    {"metric": {"scope": 7}, "value": [1, True]},
                ]
            },
        }
    ).encode()
    samples = parse_vector(body)
    assert len(samples) == 1
    scope = samples[0].labels["scope"]
    assert "\x1b" not in scope and len(scope) <= 200
    (row,) = build_rows({"fleet": [Sample({**samples[0].labels, Q: "up"}, 1)]}, now=NOW)
    assert texts(row)[0] == scope  # shown as plain text by the app (rich Text, never markup)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"<html>nope</html>", "not JSON"),
        (b"[1,2]", "not a Prometheus API document"),
        (
            b'{"status":"error","errorType":"bad_data","error":"parse error\\u001b[31m at char 3"}',
            "query failed",
        ),
        (b"[" * 100_000, "not JSON"),
        (  # VictoriaMetrics echoes the query first: its reason is what is kept
            b'{"status":"error","error":"error when executing query=\\"topk(200, '
            + b"x" * 500
            + b'\\" on the time range (start=1, end=1, step=5000): timeout exceeded"}',
            "query failed: timeout exceeded",
        ),
    ],
)
def test_bad_answers_are_one_line(body: bytes, fragment: str) -> None:
    with pytest.raises(PrometheusError) as info:
        parse_vector(body)
    text = str(info.value)
    assert fragment in text and "\n" not in text and "\x1b" not in text


def test_scrape_interval_and_durations() -> None:
    yaml = (
        "global:\n  scrape_interval: 5s\n  scrape_timeout: 10s\n"
        "scrape_configs:\n- job_name: x\n  scrape_interval: 1m\n"
    )
    assert parse_scrape_interval(json.dumps({"status": "success", "data": {"yaml": yaml}}).encode()) == 5
    assert parse_scrape_interval(b"{}") is None
    assert duration_seconds("1m30s") == 90 and duration_seconds("6h") == 21600
    assert duration_seconds("250ms") == 0.25
    assert duration_seconds("6x") is None and duration_seconds("") is None and duration_seconds("5") is None


def test_two_rounds_of_bounded_queries() -> None:
    q = FleetQueries(scope_label="cluster", selector='job="patroni"', match='env="prod"', limit=50)
    first = q.first()
    assert set(first) == {"counts", "worst"} and first["worst"].startswith("topk(50, ")
    assert (
        'patroni_primary{job="patroni",env="prod"}' in first["worst"] and "min_over_time(" in first["worst"]
    )
    assert first["counts"].startswith('count_values("level", ')
    scopes = [f"c-{i:05d}.prod" for i in range(400)]
    detail = q.detail(scopes)
    assert len(detail) > 1 and all(len(quote(d)) <= 7000 for d in detail)
    # Every cluster once; "." is a literal in RE2's eyes, not any character; --match is not repeated.
    named = [n for d in detail for n in d.split('cluster=~"')[1].split('"')[0].split("|")]
    assert [re.sub(r"\\(.)", r"\1", n.replace("\\\\", "\\")) for n in named] == scopes
    # Only metacharacters are escaped: a plain alternation is a lookup by value for Prometheus.
    assert named[0] == "c-00000\\\\.prod"
    assert all('env="prod"' not in d and 'proxy="pg_writer",cluster=~' in d for d in detail)
    # The same clusters in another order ask the same queries: an engine's caches answer them.
    assert q.detail(scopes[::-1]) == detail


def test_a_name_filter_is_literal_and_case_blind() -> None:
    q = FleetQueries().matching('a.b"c\\')
    assert q.match == 'scope=~"(?i).*a\\\\.b\\"c\\\\\\\\.*"'
    assert FleetQueries().matching("") == FleetQueries()


def test_filter() -> None:
    rows = _rows(3)
    assert [r.scope for r in rows if matches(r, "0002")] == ["cluster-00002"]
    assert all(matches(r, "") for r in rows)


def test_history_events() -> None:
    steps = [0.0, 5.0, 10.0, 15.0, 20.0]
    primary = (
        Series({"name": "n1"}, ((0.0, 1), (5.0, 1), (10.0, 0), (15.0, 0), (20.0, 0))),
        Series({"name": "n2"}, ((0.0, 0), (5.0, 0), (10.0, 1), (15.0, 1), (20.0, 1))),
    )
    timeline = (Series({"name": "n2"}, ((0.0, 3), (5.0, 3), (10.0, 4), (15.0, 4), (20.0, 4))),)
    running = (Series({"name": "n1"}, ((0.0, 1), (5.0, 1), (20.0, 1))),)  # gap 10..15: an outage
    events = history_events(primary, timeline, running, steps=steps)
    kinds = [(e.kind, e.text) for e in events]
    assert ("leader", "leader n1 → n2") in kinds
    assert ("timeline", "timeline 3 → 4") in kinds
    outage = next(e for e in events if e.kind == "member")
    assert outage.node == "n1" and outage.duration_s == 10.0


def test_parse_matrix_skips_junk() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "result": [{"metric": {"name": "a"}, "values": [[1, "1"], [2, "x"], "bad"]}, {"metric": 3}]
            },
        }
    ).encode()
    (series,) = parse_matrix(body)
    assert series.points == ((1.0, 1.0),)
