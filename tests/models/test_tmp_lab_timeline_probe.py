"""TEMPORARY probe (deleted after the run): the timeline on the real lab across faults."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time

import pytest

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.health import Pools
from pgtop_ha.models.timeline import Timeline, cadence
from pgtop_ha.settings import Settings

pytestmark = pytest.mark.lab


async def _watch(lab_settings: Settings, seconds: float, fault: object) -> Timeline:
    pools = Pools(lab_settings.haproxy.writer_backends, lab_settings.haproxy.reader_backends)
    tl = Timeline(pools=pools)
    poller = Poller.from_settings(lab_settings)
    cadences: list[float] = []

    def interval() -> float:
        c = cadence(tl, 1.0, system_clock())
        cadences.append(c)
        return c

    task = asyncio.create_task(poller.run(tl.observe, interval))
    await asyncio.sleep(4)
    t0 = time.monotonic()
    print("FAULT", await asyncio.to_thread(fault), system_clock().isoformat())  # type: ignore[operator]
    while time.monotonic() - t0 < seconds:
        await asyncio.sleep(0.5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await poller.aclose()
    for e in tl.events():
        print(f"{e.at.time()} {e.source:8} {e.kind:13} {e.node or '-':6} {e.text} dur={e.duration_s} x{e.count}")
    for r in tl.failovers():
        print(r.model_dump_json())
    print("cycles", poller.cycles, "fast share", sum(c < 1.0 for c in cadences) / max(1, len(cadences)))
    return tl


async def test_probe_kill_primary(lab: Lab, lab_settings: Settings) -> None:
    quiet = Lab(lab.layout, out=io.StringIO())
    tl = await _watch(lab_settings, 40, lambda: faults.kill_primary(quiet))
    assert not any("Patroni REST unreachable" in e.text for e in tl.events())


async def test_probe_crash_leader(lab: Lab, lab_settings: Settings) -> None:
    quiet = Lab(lab.layout, out=io.StringIO())
    leader = await asyncio.to_thread(lab.leader)
    assert leader is not None
    tl = await _watch(lab_settings, 60, lambda: faults.crash(quiet, leader))
    await asyncio.to_thread(faults.start_patroni, quiet, leader)
    assert tl.failovers()
