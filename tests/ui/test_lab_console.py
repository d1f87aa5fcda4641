"""The console against the real lab: leader and replicas, a failover, and kill -9 of the primary."""

from __future__ import annotations

import asyncio

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.settings import Settings
from pgtop_ha.ui.app import PgtopApp
from tests.support.lab_polls import quiet
from tests.ui.harness import texts, until

pytestmark = pytest.mark.lab


def cluster_rows(app: PgtopApp) -> dict[str, list[str]]:
    """Cluster pane rows by member name (empty before the first snapshot)."""
    try:
        return {r[0]: r for r in texts(app, "cluster")}
    except Exception:  # the screen may not be mounted yet
        return {}


def overview_rows(app: PgtopApp) -> dict[str, list[str]]:
    """The 80x24 overview's member rows (Member, Role, Patroni, PG, ...) by member name."""
    try:
        return {r[0].split(" ", 1)[-1]: r for r in texts(app, "overview-members")}
    except Exception:  # the screen may not be mounted yet
        return {}


def leads_overview(rows: dict[str, list[str]], name: str) -> bool:
    """The overview shows ``name`` as Patroni leader with PostgreSQL primary."""
    row = rows.get(name)
    return row is not None and row[1] == "leader" and row[3] == "primary"


def leads(rows: dict[str, list[str]], name: str) -> bool:
    """The console shows ``name`` as Patroni leader with PostgreSQL primary."""
    row = rows.get(name)
    return row is not None and row[2] == "leader" and row[3] == "primary"


async def test_leader_and_replicas_visible(lab: Lab, lab_settings: Settings) -> None:
    leader = await asyncio.to_thread(lab.leader)
    assert leader is not None
    app = PgtopApp(lab_settings.console(), Poller.from_settings(lab_settings))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: leads(cluster_rows(app), leader), 30, "leader shown")
        await until(
            pilot,
            lambda: all(
                cluster_rows(app).get(n, ["", "", "", ""])[3] == "standby" for n in NODE_NAMES if n != leader
            ),
            30,
            "replicas shown as standbys",
        )
        rows = cluster_rows(app)
        assert rows[leader][5] == "UP"  # the writer pool routes to the leader
        assert {rows[n][2] for n in NODE_NAMES if n != leader} <= {"sync", "replica"}
        await until(pilot, lambda: len(texts(app, "haproxy")) >= 6, 15, "HAProxy servers")
        await pilot.press("3")
        await until(pilot, lambda: len(texts(app, "replication")) == 2, 15, "two walsenders")


async def test_failover_shows_old_leader_unreachable_and_new_leader(lab: Lab, lab_settings: Settings) -> None:
    old = await asyncio.to_thread(lab.leader)
    assert old is not None
    app = PgtopApp(lab_settings.console(), Poller.from_settings(lab_settings))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: leads(cluster_rows(app), old), 30, "old leader shown")
        # A graceful Patroni stop on the leader hands over at once and takes its PostgreSQL down.
        await asyncio.to_thread(faults.stop_patroni, quiet(lab), old)
        new = await asyncio.to_thread(lab.leader)

        def shown() -> bool:
            rows = cluster_rows(app)
            others = [n for n in NODE_NAMES if n != old and leads(rows, n)]
            return bool(others) and rows[old][1] == "✖ CRIT" and rows[old][3] == "DOWN"

        await until(pilot, shown, 45, "old leader DOWN and a new leader leading")
        rows = cluster_rows(app)
        assert rows[old][10].startswith("✖")  # reachability with the age of the last success
        if new is not None and new != old:
            assert leads(rows, new)


async def test_kill_primary_contradiction_shown(lab: Lab, lab_settings: Settings) -> None:
    leader = await asyncio.to_thread(lab.leader)
    assert leader is not None
    app = PgtopApp(lab_settings.console(), Poller.from_settings(lab_settings))
    async with app.run_test(size=(80, 24)) as pilot:
        # The 80x24 overview is what a tester reads in a tmux pane beside the failure test.
        await until(pilot, lambda: leads_overview(overview_rows(app), leader), 30, "leader shown")
        await asyncio.to_thread(faults.kill_primary, quiet(lab))

        def contradiction() -> bool:
            row = overview_rows(app).get(leader)
            return row is not None and row[0].startswith("✖") and row[1] == "leader" and row[3] == "DOWN"

        # Patroni restarts PostgreSQL in place within ~15-25 s: the console must show it before.
        await until(pilot, contradiction, 15, "PG DOWN while Patroni still calls it leader")
        problems = texts(app, "overview")
        assert problems[0][0] == "✖ CRIT" and problems[0][1].startswith(f"{leader}: PG DOWN")
