"""If the leader died now, on the lab: a standby made to fall behind is named before and after a failover.

Checked against Patroni's own /history: the member the forecast names is the one Patroni promotes,
and the election explained after says why the lagging one lost.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import Callable

import httpx
import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.snapshot_cli import take_snapshot
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.forecast import FailoverForecast
from pgtop_ha.models.thresholds import Level
from pgtop_ha.settings import Settings

pytestmark = pytest.mark.lab
MAX_LAG_MIB = 16.0  # the lab's maximum_lag_on_failover


def _patroni_lag(lab: Lab, name: str) -> int:
    for m in (lab.cluster() or {}).get("members", []):
        if m.get("name") == name and isinstance(m.get("lag"), int):
            return int(m["lag"])
    return -1


def _poll(cond: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


async def _watch_failover(settings: Settings, lab: Lab, old: str, within: float) -> Timeline:
    """Poll as the console does while the leader crashes, until a new leader's report is written."""
    poller = Poller.from_settings(settings)
    timeline = Timeline(pools=settings.haproxy.pools())
    try:
        for _ in range(3):  # the forecast as it stands while the leader answers
            timeline.observe(await poller.cycle())
        faults.crash(lab, old)
        deadline = time.monotonic() + within
        while not any(r.new_leader for r in timeline.failovers()):
            assert time.monotonic() < deadline, "no new leader seen"
            timeline.observe(await poller.cycle())
            await asyncio.sleep(0.5)
    finally:
        await poller.aclose()
    return timeline


def test_a_lagging_standby_is_named_before_and_after_a_failover(lab: Lab, lab_settings: Settings) -> None:
    old = lab.leader()
    assert old is not None
    ahead, behind = [n for n in lab.layout.names if n != old][:2]
    faults.fall_behind(lab, behind)
    try:
        sql = (
            "CREATE TABLE IF NOT EXISTS forecast_wal(x int); "
            "INSERT INTO forecast_wal SELECT generate_series(1, 1000); SELECT pg_switch_wal()"
        )
        for _ in range(3):  # three segments: past the lab's 16 MiB maximum_lag_on_failover
            lab.psql(sql, old)
        _poll(lambda: _patroni_lag(lab, behind) > MAX_LAG_MIB * 1024 * 1024, 60, f"{behind} to lag")

        # The other standby replays the same segments a moment later: wait for it to be in reach.
        seen: list[FailoverForecast | None] = []

        def named() -> bool:
            seen.append(asyncio.run(take_snapshot(lab_settings)).forecast)
            return seen[-1] is not None and seen[-1].winners == (ahead,)

        _poll(named, 60, f"the forecast to name {ahead}: {seen[-1] if seen else None}")
        before = seen[-1]
        assert before is not None
        (loser,) = [c for c in before.contenders if c.name == behind]
        assert re.fullmatch(
            rf"[\d.]+ MiB behind > {MAX_LAG_MIB:.1f} MiB maximum_lag_on_failover", loser.reason
        )

        url = f"{lab.layout.patroni_url(lab.index(ahead))}/history"
        switches = len(httpx.get(url, timeout=5, trust_env=False).json())  # earlier tests' too
        timeline = asyncio.run(_watch_failover(lab_settings, lab, old, 120))
    finally:
        faults.fall_behind(lab, behind, undo=True)
    (report,) = [r for r in timeline.failovers() if r.new_leader]
    # Patroni writes /history from the new timeline's history file a loop or two after promoting.
    _poll(lambda: len(httpx.get(url, timeout=5, trust_env=False).json()) > switches, 60, "a new /history row")
    history = httpx.get(url, timeout=5, trust_env=False).json()
    assert report.new_leader == ahead == history[-1][-1]  # Patroni's own record of whom it promoted
    assert report.forecast_winners == (ahead,) and report.forecast_right is True
    assert report.election[0] == f"{ahead} won: the only member that could race"
    assert any(
        re.fullmatch(rf"{behind}: [\d.]+ MiB behind > {MAX_LAG_MIB:.1f} MiB maximum_lag_on_failover", line)
        for line in report.election[1:]
    ), report.election


def _forecast(settings: Settings) -> tuple[dict[str, str], tuple[str, ...], list[tuple[str, Level]]]:
    snap = asyncio.run(take_snapshot(settings))
    assert snap.forecast is not None and snap.verdicts is not None
    reasons = {c.name: c.reason for c in snap.forecast.contenders}
    failover = [(v.rule, v.level) for v in snap.verdicts if v.rule.startswith("failover.")]
    return reasons, snap.forecast.winners, failover


def test_a_nofailover_tag_set_and_cleared_is_read_as_patroni_reads_it(
    lab: Lab, lab_settings: Settings
) -> None:
    old = lab.leader()
    tagged, other = [n for n in lab.layout.names if n != old][:2]
    faults.nofailover(lab, tagged)
    reasons, winners, _ = _forecast(lab_settings)
    assert reasons[tagged] == "nofailover" and winners == (other,)
    faults.nofailover(lab, tagged, clear=True)
    # Races again once read so (a member's position may be unknown for a poll after a reload).
    _poll(lambda: tagged in _forecast(lab_settings)[1], 30, f"{tagged} to race again")


def test_strict_synchronous_mode_without_a_synchronous_standby_says_writes_block(
    lab: Lab, lab_settings: Settings
) -> None:
    old = lab.leader()
    assert old is not None
    faults.sync_mode(lab, "strict")
    reasons, winners, failover = _forecast(lab_settings)
    assert failover == [] and len(winners) == 1  # only the synchronous standby may take over
    (sync,) = winners
    said = asyncio.run(take_snapshot(lab_settings)).forecast
    assert said is not None and said.mode == "synchronous" and said.strict
    assert said.commit_waits_for is not None and sync in said.commit_waits_for, said.standby_names
    assert all(
        r == "not synchronous: only the synchronous standby may take over"
        for n, r in reasons.items()
        if n != sync
    )
    for name in lab.layout.names:
        if name != old:
            faults.stop_patroni(lab, name)  # no standby left: Patroni cannot name another
    # A commit now waits for a synchronous standby that is not there (a cancel would only warn).
    sql = "CREATE TABLE IF NOT EXISTS strict_wal(x int); INSERT INTO strict_wal VALUES (1)"
    with pytest.raises(subprocess.TimeoutExpired):
        lab.psql(sql, old, timeout=5)
    _poll(
        lambda: ("failover.writes-blocked", 2) in _forecast(lab_settings)[2], 30, "the writes-blocked verdict"
    )
