"""The fleet on a real fleet lab (2 labs, Prometheus, VictoriaMetrics): a switchover shows in time."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusReader
from pgtop_ha.fleet_cli import fleet_history
from pgtop_ha.judge.fleet import CRIT, EVALUATIONS, SEEN, SETTLE, FleetPage, FleetRow
from pgtop_ha.judge.fleet_rules import ALERTS
from pgtop_ha.judge.rules import PATRONI_MEMBER_DOWN
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab, _claim, _port_free
from pgtop_ha.lab.fleet import RANGE, Fleet, FleetLab, prometheus_config, scrape_config

pytestmark = pytest.mark.lab

TEST_ROWS = int(os.environ.get("PGTOPHA_TEST_ROWS", "1000"))
CLUSTERS = 2
HOURLY_S = 10  # the hourly group's interval here: what it records does not depend on it
DOWN_FOR_S = 20  # the member-down alert's `for:` here ([fleet] alert_for): how long does not matter


def _claim_fleet(start: int = 26400, stop: int = 30000) -> Fleet:
    """Two consecutive lab port ranges (and the engines' ports), claimed like tests/conftest.py does."""
    for base in range(start, stop - RANGE * CLUSTERS, RANGE):
        fleet = Fleet(base, CLUSTERS, Path(f"/tmp/pgtop-ha-fleet-test-{base}"))
        engines = [fleet.prometheus_port, fleet.victoria_port, fleet.victoria_port + 1]
        ports = [p for i in range(CLUSTERS) for p in fleet.layout(i).ports()] + engines
        if not all(_port_free(p) for p in ports):
            continue
        locks = [Path(f"/tmp/pgtop-ha-port-{base + RANGE * i}.claim") for i in range(CLUSTERS)]
        taken = [lock for lock in locks if _claim(lock)]
        if len(taken) == len(locks):
            return fleet
        for lock in taken:
            lock.unlink(missing_ok=True)
    raise AssertionError("no free port range for a fleet lab")


@pytest.fixture(scope="module")
def fleet_lab() -> Iterator[FleetLab]:
    """A 2-cluster fleet, up for this module."""
    lab = FleetLab(
        _claim_fleet(),
        out=sys.stderr,
        hourly_every_s=HOURLY_S,
        alert_for={PATRONI_MEMBER_DOWN.id: DOWN_FOR_S},
    )
    try:
        lab.up(rows=TEST_ROWS)
        yield lab
    finally:
        lab.down()


async def _page(url: str) -> FleetPage:
    return await PrometheusFleet(PrometheusReader(url), FleetQueries()).refresh()


async def _rows(url: str) -> dict[str, FleetRow]:
    return {r.scope: r for r in (await _page(url)).rows}


def test_prometheus_config_labels_each_lab() -> None:
    fleet = Fleet(26000, 3, Path("/tmp/x"))
    text = prometheus_config(fleet)
    assert text.count("scope: 'lab") == 6 and "scrape_interval: 5s" in text
    assert "127.0.0.1:26120" in text and "127.0.0.1:26132" in text  # lab3 REST, lab3 HAProxy exporter
    assert "rule_files: ['pgtop-ha.rules.yml']" in text and "evaluation_interval: 5s" in text
    # VictoriaMetrics scrapes the same targets; its rules run in vmalert, not from this file.
    scrape = scrape_config(fleet)
    assert "rule_files" not in scrape and "evaluation_interval" not in scrape
    assert scrape.split("scrape_configs:")[1] == text.split("scrape_configs:")[1]


async def test_rows_match_cluster_and_switchover_shows(fleet_lab: FleetLab) -> None:
    fleet = fleet_lab.fleet
    url = fleet.prometheus_url
    source = PrometheusFleet(PrometheusReader(url), FleetQueries())
    assert await source.interval() == 5.0  # read from Prometheus's own config

    labs = [Lab(fleet.layout(i), out=io.StringIO()) for i in range(CLUSTERS)]
    # Both engines scrape the same targets: each one's rows are the labs'.
    for engine in (url, fleet.victoria_url):
        deadline = time.monotonic() + 60
        rows: dict[str, FleetRow] = {}
        while time.monotonic() < deadline:
            rows = await _rows(engine)
            if set(rows) == {"lab1", "lab2"} and all(
                # HAProxy's exporter is a separate scrape target: wait for it too.
                r.members_up == 3 and r.streaming == 2 and r.writer_up is not None
                for r in rows.values()
            ):
                break
            await _sleep()
        for i, lab in enumerate(labs):
            row = rows[fleet.scope(i)]
            assert row.leader == lab.leader(), (engine, row, lab.cluster())
            assert (row.members_up, row.members_total, row.replicas, row.streaming) == (3, 3, 2, 2)
            assert row.writer_up == 1  # HAProxy's exporter is scraped
            assert row.paused is False and row.pending_restart == 0
    rows = await _rows(url)
    for i in range(CLUSTERS):
        assert len(await source.instances(fleet.scope(i))) == 3  # asked for a drill down

    before = rows["lab1"]
    start = time.time()
    faults.switchover(labs[0])
    new_leader = labs[0].leader()
    assert new_leader is not None and new_leader != before.leader
    switched = time.monotonic()
    deadline = switched + 2 * 5.0 + 2.0  # two scrape intervals (and one query's time)
    row = before
    while time.monotonic() < deadline:
        row = (await _rows(url))["lab1"]
        if row.leader == new_leader:
            break
        await _sleep()
    assert row.leader == new_leader, (
        f"fleet row still shows {row.leader} after {time.monotonic() - switched:.1f}s"
    )
    assert (await _rows(url))["lab2"].leader == labs[1].leader()

    # The history sees the same switchover (leader change, timeline bump) from range queries.
    deadline = time.monotonic() + 30
    kinds: set[str] = set()
    while time.monotonic() < deadline:
        events = await fleet_history(
            PrometheusReader(url), FleetQueries(), "lab1", time.time() - start + 60, time.time()
        )
        kinds = {e.kind for e in events}
        if {"leader", "timeline"} <= kinds:
            break
        await _sleep()
    assert {"leader", "timeline"} <= kinds

    # The leader's Patroni stopped in lab2: its row sorts first, counted crit, within two scrapes
    # (read from the recorded rules the lab loads), then its alert fires from the real /metrics.
    leader = labs[1].leader()
    assert leader is not None
    # The hourly group records which members each cluster has: its first evaluation comes within
    # its interval of Prometheus's start, and may run before every member was scraped; the next
    # one, an interval later, knows them all. A member unknown to it is not counted down. The
    # records are read SETTLE evaluations after the hourly group's first.
    # VictoriaMetrics shows a new series some seconds after it is written: one interval more.
    deadline = time.monotonic() + 2 * HOURLY_S + (SETTLE + 3) * 5.0 + 5.0
    # The screen reads Prometheus's records; over VictoriaMetrics only the alerts are looked at.
    for engine, screen in ((url, True), (fleet.victoria_url, False)):
        while not await _knows_every_member(engine, "lab2", screen):
            assert time.monotonic() < deadline, f"{engine}: the recorded rules did not know every member"
            await _sleep()
    faults.stop_patroni(labs[1], leader)
    try:
        stopped = time.monotonic()
        page = await _page(url)
        # Two scrapes, and one evaluation of the rules the counts are read from.
        while time.monotonic() < stopped + 2 * 5.0 + 5.0 + 2.0:
            page = await _page(url)
            top = page.rows[0] if page.rows else None
            # Until the stopped member's series go stale, it may still read as a second leader.
            is_down = top is not None and top.scope == "lab2" and "1 down" in top.said
            if is_down and top is not None and top.level == CRIT and page.counts.crit == 1:
                break
            await _sleep()
        assert page.rows[0].scope == "lab2" and "1 down" in page.rows[0].said, page.rows
        assert (page.counts.total, page.counts.crit) == (2, 1)
        assert page.source.startswith("recorded rules"), page.source
        down = ALERTS[PATRONI_MEMBER_DOWN.id]
        expected = {
            "alertname": down.name,
            "rule": PATRONI_MEMBER_DOWN.id,
            "scope": "lab2",
            "severity": "critical",
        }
        # Prometheus's rules, and vmalert's (the standalone alerts) over VictoriaMetrics.
        for rules_url in (url, fleet.vmalert_url):
            firing: list[dict[str, str]] = []
            deadline = stopped + DOWN_FOR_S + 3 * 5.0 + 2.0  # for:, then a scrape and an evaluation or two
            async with httpx.AsyncClient(trust_env=False) as http:
                while time.monotonic() < deadline and expected not in firing:
                    alerts = (await http.get(f"{rules_url}/api/v1/alerts")).json()["data"]["alerts"] or []
                    # vmalert labels each alert with its group too.
                    firing = [
                        {k: v for k, v in a["labels"].items() if k != "alertgroup"}
                        for a in alerts
                        if a["state"] == "firing"
                    ]
                    await _sleep()
            assert expected in firing, (rules_url, firing)
            # Nothing else fires: not lab1's switchover earlier (members scraped apart), not a no-leader.
            assert firing == [expected], (rules_url, firing)
    finally:
        faults.start_patroni(labs[1], leader)


async def _knows_every_member(url: str, scope: str, screen: bool) -> bool:
    """Whether ``url``'s hourly record knows every member scraped, and its alerts are on (``screen``:
    and the fleet screen reads its records)."""
    if screen and not (await _page(url)).source.startswith("recorded rules"):
        return False
    reader = PrometheusReader(url)
    try:
        known = await reader.query(f'{SEEN}{{scope="{scope}"}}')
        scraped = await reader.query(f'count(patroni_postgres_running{{scope="{scope}"}})')
        alerting = await reader.query(f"{EVALUATIONS} >= {SETTLE}")
    finally:
        await reader.aclose()
    return bool(alerting) and len(known) == sum(int(s.value) for s in scraped)


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.5)  # polling interval of a deadline loop, not a synchronisation
