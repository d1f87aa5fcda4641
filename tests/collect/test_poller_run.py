"""The poll loop itself: paced cycles handed to a callback, cancellation-safe, failures as data."""

from __future__ import annotations

import asyncio
import socket

from pgtop_ha.clock import StepClock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import NodeSettings, Settings


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_run_hands_snapshots_and_stops_on_cancel() -> None:
    port = _closed_port()
    settings = Settings(
        nodes=(NodeSettings(name="a", host="127.0.0.1", port=port),),
        patroni={"urls": (f"http://127.0.0.1:{port}",), "timeout": 0.5},
    )
    clock = StepClock()
    poller = Poller.from_settings(settings, clock)
    seen: list[ClusterSnapshot] = []
    three = asyncio.Event()

    async def on_snapshot(snap: ClusterSnapshot) -> None:
        seen.append(snap)
        if len(seen) >= 3:
            three.set()

    task = asyncio.create_task(poller.run(on_snapshot, lambda: 0.2))
    try:
        async with asyncio.timeout(10):
            await three.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await poller.aclose()
    assert task.cancelled()
    times = [s.taken_at for s in seen]
    assert times == sorted(times) and len(set(times)) == len(times)  # the injected clock
    assert all(s.node("a") is not None and s.node("a").error for s in seen)  # type: ignore[union-attr]
    assert any("/cluster" in e for e in seen[0].errors)
    assert poller.cycles >= 3
