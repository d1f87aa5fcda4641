"""The fleet's PromQL on a real Prometheus over a synthetic fleet (backfilled by promtool).

Every rule of RULES is made to happen on one cluster each; Prometheus's counts and ranking must be
what the judge says of the same clusters' rows, and a refresh's bytes must not grow with the fleet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusReader
from pgtop_ha.judge.fleet import CRIT, EVALUATIONS, OK, RULES, SETTLE, WARN, FleetPage, level_of
from pgtop_ha.judge.fleet_rules import ALERTS
from pgtop_ha.judge.rules import (
    LEADER_NONE,
    LEADER_SEVERAL,
    PATRONI_DCS_STALE,
    PATRONI_MEMBER_DOWN,
    PATRONI_NOT_STREAMING,
    PATRONI_PAUSED,
    PATRONI_PENDING_RESTART,
    REPLICATION_LAG,
    ROUTING_WRITER_POOL,
)
from pgtop_ha.lab.synthetic_fleet import (
    FAULTS,
    SyntheticPrometheus,
    SyntheticVictoria,
    fault_lines,
    scope_of,
)
from tests.support.ports import free_port

pytestmark = pytest.mark.lab

SMALL, LARGE = 300, 3000
HOURLY_S = 10  # the hourly group's interval here: what it records does not depend on it
FAULTY = {7 * i + 3: fault for i, fault in enumerate(FAULTS)}


def _port() -> int:
    return free_port(3)  # VictoriaMetrics, vmalert on the next, its notifier's on the one after


ENGINES: dict[str, type[SyntheticPrometheus] | type[SyntheticVictoria]] = {
    "Prometheus": SyntheticPrometheus,
    "VictoriaMetrics": SyntheticVictoria,
}


@pytest.fixture(scope="module", params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> type[SyntheticPrometheus] | type[SyntheticVictoria]:
    """Each engine the fleet reads: every test here runs on both."""
    return ENGINES[request.param]


@pytest.fixture(scope="module")
def small(
    tmp_path_factory: pytest.TempPathFactory, engine: type[SyntheticPrometheus] | type[SyntheticVictoria]
) -> Iterator[str]:
    prom = engine(tmp_path_factory.mktemp("small") / "engine", _port())
    try:
        prom.up(SMALL, FAULTY)
        yield prom.url
    finally:
        prom.down()


def _source(url: str, **kw: object) -> PrometheusFleet:
    return PrometheusFleet(PrometheusReader(url, timeout=60), FleetQueries(**kw))  # type: ignore[arg-type]


async def test_prometheus_counts_and_ranks_as_the_judge_grades(small: str) -> None:
    every = await _source(small, limit=SMALL).refresh()
    assert len(every.rows) == SMALL and every.counts.total == SMALL
    levels = [r.level for r in every.rows]
    assert (every.counts.crit, every.counts.warn) == (levels.count(CRIT), levels.count(WARN))
    worst = await _source(small, limit=30).refresh()
    # The same clusters in the same order, but among equals (healthy ones) Prometheus picks any.
    assert [r.severity for r in worst.rows] == [r.severity for r in every.rows[:30]]
    bad = [r.scope for r in every.rows if r.severity]
    assert [r.scope for r in worst.rows if r.severity] == bad and len(bad) == len(FAULTY)
    assert worst.counts == every.counts  # the whole fleet is accounted for, whatever is shown


async def test_each_rule_is_seen_with_its_level(small: str) -> None:
    rows = {r.scope: r for r in (await _source(small, limit=SMALL).refresh()).rows}
    said = {
        LEADER_NONE.id: "no leader",
        LEADER_SEVERAL.id: "2 leaders",
        ROUTING_WRITER_POOL.id: "writer has 0 UP",
        PATRONI_DCS_STALE.id: "DCS not seen",
        PATRONI_MEMBER_DOWN.id: "1 down",
        PATRONI_NOT_STREAMING.id: "1 not streaming",
        REPLICATION_LAG.id: "lagging",
        PATRONI_PAUSED.id: "maintenance mode",
        PATRONI_PENDING_RESTART.id: "pending restart",
    }
    for index, fault in FAULTY.items():
        row = rows[scope_of(index)]
        assert row.level == RULES[fault].level == level_of(row.severity), (fault, row)
        assert row.severity == RULES[fault].points(), (fault, row)
        told = {(v.rule, v.text) for v in row.problems}
        assert told == ({(fault, said[fault])} if fault in said else set()), (fault, row)
    healthy = rows[scope_of(0)]
    assert healthy.level == OK and healthy.severity == 0 and healthy.members_up == healthy.members_total == 3


async def test_the_filter_and_match_are_asked_of_prometheus(small: str) -> None:
    page = await _source(small).refresh("pg-00073")
    assert [r.scope for r in page.rows] == ["pg-00073"] and page.counts.total == 1
    page = await _source(small, match='scope=~"pg-0000.*"').refresh()
    assert page.counts.total == 10 and page.counts.crit == 1  # pg-00003 has no leader
    assert await _source(small).instances("pg-00005") == (
        "127.0.0.6:8008",
        "127.0.0.6:8009",
        "127.0.0.6:8010",
    )


async def test_a_refresh_reads_as_much_at_ten_times_the_fleet(
    small: str, tmp_path: Path, engine: type[SyntheticPrometheus] | type[SyntheticVictoria]
) -> None:
    prom = engine(tmp_path / "large", _port())
    try:
        prom.up(LARGE, FAULTY)
        large = await _source(prom.url, limit=50).refresh()
    finally:
        prom.down()
    base = await _source(small, limit=50).refresh()
    assert large.counts.total == LARGE and len(large.rows) == len(base.rows) == 50
    assert large.bytes_read < base.bytes_read * 1.1, (large.bytes_read, base.bytes_read)


def _ranking(page: FleetPage) -> list[int]:
    return [r.severity for r in page.rows]


async def test_recorded_rules_rank_as_the_live_promql_does(
    tmp_path: Path, engine: type[SyntheticPrometheus] | type[SyntheticVictoria]
) -> None:
    """From the ruler's start: live until the records settle, then ranked as live; only faults alerted."""
    prom = engine(tmp_path / "recorded", _port())
    faults = {(ALERTS[f].name, scope_of(i)) for i, f in FAULTY.items() if f in ALERTS}
    alerted: set[tuple[str, str]] = set()
    try:
        prom.up(SMALL, FAULTY, rules=True, interval_s=2, hourly_every_s=HOURLY_S)
        live = await _source(prom.url, limit=50, match='scope=~".+"', recorded_match_ok=False).refresh()
        # The hourly group's first evaluation may come a whole interval after the start (both
        # engines spread their groups' starts); the chain then takes SETTLE evaluations.
        deadline = time.monotonic() + 12 * HOURLY_S
        async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
            while not (recorded := await _source(prom.url, limit=50).refresh()).source.startswith("recorded"):
                answer = (await http.get(f"{prom.rules_url}/api/v1/alerts")).json()["data"]["alerts"]
                alerted |= {(a["labels"]["alertname"], a["labels"]["scope"]) for a in answer or ()}
                assert time.monotonic() < deadline, f"still {recorded.source} after 12 hourly intervals"
                await asyncio.sleep(0.5)
        filtered = await _source(prom.url).refresh("pg-00073")
    finally:
        prom.down()
    assert alerted <= faults, sorted(alerted - faults)
    # The first recorded refresh already: a part or a first evaluation's guess is never read.
    assert recorded.counts == live.counts and recorded.counts.total == SMALL
    assert _ranking(recorded) == _ranking(live)
    assert [r.scope for r in filtered.rows] == ["pg-00073"] and filtered.counts.total == 1


def test_vmalert_fires_standalone_alerts_within_their_for_and_an_interval(tmp_path: Path) -> None:
    """`fleet rules --standalone-alerts` on vmalert: each fault fires its own alert, not evaluations late."""
    interval = 2
    vm = SyntheticVictoria(tmp_path / "alerts", _port())
    broken = {
        ALERTS[ROUTING_WRITER_POOL.id].name: scope_of(1),  # its points read Patroni's and HAProxy's series
        ALERTS[LEADER_NONE.id].name: scope_of(2),  # its recorded points read the recorded primaries
    }
    fired: dict[str, float] = {}
    firing: set[tuple[str, str]] = set()
    wait = 10  # both alerts' `for:` here ([fleet] alert_for): how long does not matter
    # vmalert aligns each query's time to the interval, so a fault is read one or two ticks after it.
    within = wait + 2 * interval + 2
    try:
        vm.up(
            SMALL,
            {},
            rules=True,
            interval_s=interval,
            hourly_every_s=HOURLY_S,
            standalone_alerts=True,
            alert_for={ROUTING_WRITER_POOL.id: wait, LEADER_NONE.id: wait},
        )
        with httpx.Client(timeout=30, trust_env=False) as http:
            # The alerts wait for their group's count, not for the hourly group's records.
            counted = {"query": f"{EVALUATIONS} >= {SETTLE}"}
            deadline = time.monotonic() + 12 * HOURLY_S
            while not http.get(f"{vm.url}/api/v1/query", params=counted).json()["data"]["result"]:
                assert time.monotonic() < deadline, f"{EVALUATIONS} not {SETTLE} in time"
                time.sleep(0.5)  # the polling interval of a deadline loop, not a synchronisation
            began = time.monotonic()
            while len(fired) < len(broken):
                assert time.monotonic() - began < 2 * within, f"only {sorted(fired)} fired"
                # Each scrape says it again: the writer pool without its server, no member leading.
                broke = fault_lines(1, 2, int(time.time() * 1000))
                http.post(f"{vm.url}/api/v1/import/prometheus", content=broke)
                answer = http.get(f"{vm.rules_url}/api/v1/alerts").json()["data"]["alerts"] or []
                firing = {
                    (a["labels"]["alertname"], a["labels"]["scope"]) for a in answer if a["state"] == "firing"
                }
                for name, scope in firing:
                    if broken.get(name) == scope:
                        fired.setdefault(name, time.monotonic() - began)
                time.sleep(0.5)  # the polling interval of a deadline loop, not a synchronisation
    finally:
        vm.down()
    assert firing == set(broken.items()), sorted(firing)
    late = {name: round(took, 1) for name, took in fired.items() if took > within}
    assert not late, f"fired after {late} s, not within {within} s"
