"""What Patroni says of its members on the lab: versions apart midway through an upgrade, and the
timeline switches before the console ran (Patroni's /history) on a console started afterwards."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from pgtop_ha.collect.poller import Poller
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.procs import poll
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import load_settings
from tests.support.lab_polls import cli_json, quiet, until_seen


def test_a_member_on_another_patroni_version_is_an_upgrade_in_progress(lab: Lab) -> None:
    leader = lab.leader()
    node = next(n for n in lab.layout.names if n != leader)
    seen: list[dict[str, Any]] = []

    def verdict() -> list[dict[str, Any]]:
        seen.append(cli_json(lab.layout.console_config, "check", "--json"))
        return [v for v in seen[-1]["verdicts"] if v["rule"] == "patroni.versions"]

    faults.mixed_patroni(quiet(lab), node, "4.0")
    try:
        assert poll(lambda: bool(verdict()), 30, interval=0.5), seen[-1]
        (found,) = verdict()
        assert found["level"] == 1 and "4.0.11" in found["text"], found
        doc = cli_json(lab.layout.console_config, "snapshot")
        versions = {m["name"]: m["patroni_version"] for m in doc["members"]}
        assert versions[node] == "4.0.11" and len(set(versions.values())) == 2, versions
    finally:
        faults.stop_patroni(quiet(lab), node)
        faults.start_patroni(quiet(lab), node)
    assert poll(lambda: not verdict(), 60, interval=0.5), seen[-1]


def test_a_console_started_after_a_switchover_tells_it_from_history(lab: Lab) -> None:
    old = lab.leader()
    new = next(n for n in lab.layout.names if n != old)
    before = datetime.now(UTC) - timedelta(seconds=2)
    faults.switchover(quiet(lab), new)
    after = datetime.now(UTC) + timedelta(seconds=2)
    url = f"{lab.layout.patroni_url(lab.index(new))}/history"

    def recorded() -> bool:
        # Patroni writes the switch to /history a moment after the promotion.
        rows = httpx.get(url, timeout=2, trust_env=False, verify=lab.layout.verify).json()
        return bool(rows) and rows[-1][-1] == new

    assert poll(recorded, 30, interval=0.5)
    # A console started now: /history comes with its first answers, its timeline tells the switch.
    timeline = Timeline()
    told: list[Event] = []

    def keep(snap: ClusterSnapshot) -> None:
        told.extend(e for e in timeline.observe(snap) if e.kind == "history")

    async def watch() -> None:
        poller = Poller.from_settings(load_settings(lab.layout.console_config))
        try:
            await until_seen(poller, lambda s: bool(s.history), 20, "/history", keep)
        finally:
            await poller.aclose()

    asyncio.run(watch())
    assert told
    last = max(told, key=lambda e: e.at)
    assert last.node == new and before <= last.at <= after, (last, before, after)
    assert last.text.endswith(f"new leader {new}), from /history"), last.text
