"""Fleet rows from Prometheus answers: pure parsing and derivation."""

from __future__ import annotations

import json

import pytest

from pgtop_ha.collect.prometheus import (
    PrometheusError,
    duration_seconds,
    parse_matrix,
    parse_scrape_interval,
    parse_vector,
)
from pgtop_ha.judge.fleet import FleetQueries, Q, Sample, Series, build_rows, history_events, matches
from tests.fleet.synth import synthetic_bodies

NOW = 1_700_000_000.0


def _rows(clusters: int = 3):  # type: ignore[no-untyped-def]
    bodies = synthetic_bodies(clusters, now=NOW)
    return build_rows({k: parse_vector(v) for k, v in bodies.items()}, now=NOW)


def test_healthy_fleet_rows() -> None:
    rows = _rows(3)
    assert [r.scope for r in rows] == ["cluster-0000", "cluster-0001", "cluster-0002"]
    r = rows[1]
    assert (r.leader, r.members_up, r.members_total, r.streaming, r.replicas) == ("node1", 3, 3, 2, 2)
    assert r.max_lag_bytes == 10_000
    assert r.timeline == 3
    assert r.writer_up == 1
    assert r.dcs_age_s == pytest.approx(2)
    assert r.instances == ("127.0.0.1:8000", "127.0.0.1:8001", "127.0.0.1:8002")
    assert rows[0].timeline_changes == 1 and rows[1].timeline_changes == 0
    assert r.problems == ()


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
    rows = build_rows({"fleet": fleet, "members": members}, now=NOW)
    assert [r.scope for r in rows] == ["c", "b", "a"]  # c: no leader, 3 down
    assert rows[0].members_up == 0 and rows[0].leader is None and "no leader" in rows[0].problems
    assert "no leader" in rows[1].problems and "1 down" in rows[1].problems
    a = rows[2]
    assert (a.leader, a.members_up, a.members_total, a.replicas, a.streaming) == ("n1", 2, 3, 2, 1)
    assert a.problems == ("1 down", "1 not streaming")


def test_writer_not_exactly_one_and_two_leaders() -> None:
    fleet = [_leader("a", "n1"), _leader("a", "n2"), *_agg("a", up=2, streaming=0, writer=2)]
    (row,) = build_rows({"fleet": fleet, "members": _members("a", "n1", "n2")}, now=NOW)
    assert row.writer_up == 2 and "writer has 2 UP" in row.problems and "2 leaders" in row.problems
    assert row.leader == "n1, n2"


def test_missing_labels_tolerated() -> None:
    fleet = [
        Sample({Q: "up"}, 3),  # no scope: skipped
        Sample({"scope": "x"}, 3),  # no q: skipped
        Sample({"scope": "x", Q: "leader"}, 1),  # no name
        Sample({"scope": "x", Q: "unknown"}, 1),
        Sample({"scope": "x", Q: "up"}, -5),  # out of range: 0
    ]
    members = [Sample({"scope": "x"}, 1), Sample({}, 1)]
    body = json.dumps(
        {"status": "success", "data": {"result": [{"metric": {}, "value": [1, "1"]}, {"value": [1, "1"]}, 5]}}
    ).encode()
    assert parse_vector(body) == (Sample({}, 1.0),)
    (row,) = build_rows({"fleet": fleet, "members": members}, now=NOW)
    assert row.scope == "x" and row.leader == "?" and row.members_up == 0
    assert row.timeline is None and row.dcs_age_s is None and row.writer_up is None
    assert row.cells()[4] == "-"


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
    assert row.cells()[0] == scope  # shown as plain text by the app (rich Text, never markup)


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


def test_queries_are_a_handful() -> None:
    q = FleetQueries(scope_label="cluster", selector='job="patroni"').all()
    assert len(q) <= 5
    assert 'patroni_primary{job="patroni"}' in q["fleet"] and "changes(" in q["fleet"]
    assert "by (cluster)" in q["fleet"] and "by (cluster, name, instance)" in q["members"]


def test_filter() -> None:
    rows = _rows(3)
    assert [r.scope for r in rows if matches(r, "0002")] == ["cluster-0002"]
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
