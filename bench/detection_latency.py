"""Detection latency: how long after Patroni's /cluster names a new leader the console's snapshot does.

A thread reads GET /cluster at 20 Hz and notes when a new leader first appears there; the real
Poller runs beside it at the console's adaptive cadence (engines/timeline.cadence, fed by a
Timeline as the console feeds it) and notes when a snapshot first names that leader. Each
switchover (faults.switchover, through Patroni's REST API) starts from a calm cluster, so the
cadence is the idle one when it begins. Issue 9 asks for ≤ 0.3 s (median). Example:

    .venv/bin/python bench/detection_latency.py --base-port 27400 --state-dir /tmp/perf-lab --switchovers 5
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.engines.timeline import Timeline, cadence
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import Layout, saved_layout
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import load_settings

API_PERIOD_S = 0.05  # 20 Hz, as the screen reader


class ApiWatch(threading.Thread):
    """Reads /cluster at 20 Hz; remembers when each leader was first named (monotonic seconds)."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(name="cluster-20hz", daemon=True)
        self.urls = [f"{lab.layout.patroni_url(i)}/cluster" for i in range(len(lab.layout.names))]
        self.seen: list[tuple[float, str | None]] = []  # (when, leader) at each change
        self.stop = threading.Event()

    def leader(self, client: httpx.Client) -> tuple[bool, str | None]:
        """(answered, leader) from the first member that answers."""
        for url in self.urls:
            try:
                data = client.get(url).json()
            except (httpx.HTTPError, ValueError):
                continue
            members = data.get("members", []) if isinstance(data, dict) else []
            return True, next((m.get("name") for m in members if m.get("role") == "leader"), None)
        return False, None

    def run(self) -> None:
        """Poll until stopped."""
        with httpx.Client(timeout=0.5, trust_env=False) as client:
            while not self.stop.is_set():
                started = time.monotonic()
                answered, leader = self.leader(client)
                # Stamp with when the request was sent: the leader was named no later than that answer.
                if answered and (not self.seen or self.seen[-1][1] != leader):
                    self.seen.append((started, leader))
                self.stop.wait(max(0.0, API_PERIOD_S - (time.monotonic() - started)))

    def named_at(self, leader: str, after: float) -> float | None:
        """When /cluster first named ``leader`` after ``after``."""
        return next((t for t, who in list(self.seen) if t >= after and who == leader), None)


async def wait_for(cond: object, within: float, what: str) -> None:
    """Poll ``cond()`` until true; SystemExit naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def calm(lab: Lab, pace: Callable[[], float], idle: float, within: float = 120) -> None:
    """Until the cadence is the idle one again and the lab is healthy (a leader change keeps it fast 30 s)."""
    deadline = time.monotonic() + within
    while pace() < idle or not await asyncio.to_thread(lab.healthy):
        if time.monotonic() > deadline:
            raise SystemExit(f"the cluster did not calm down within {within:.0f} s")
        await asyncio.sleep(0.5)


async def first_shown(shown: list[tuple[float, str | None]], leader: str, after: float) -> float:
    """When a snapshot first named ``leader`` after ``after`` (waits up to 30 s)."""
    await wait_for(lambda: any(t >= after and w == leader for t, w in shown), 30, "the console")
    return next(t for t, w in shown if t >= after and w == leader)


async def measure(lab: Lab, switchovers: int, settle: float) -> dict[str, object]:
    """Run ``switchovers`` switchovers; the console's delay behind /cluster for each."""
    settings = load_settings(lab.layout.console_config, environ={})
    poller = Poller.from_settings(settings)
    timeline = Timeline(pools=settings.haproxy.pools())
    shown: list[tuple[float, str | None]] = []  # (when, leader) at each change, as snapshots said
    paced: dict[float, float] = {}  # the cadence in force when each change was shown
    intervals: list[float] = []

    def on_snapshot(snap: ClusterSnapshot) -> None:
        was = cadence(timeline, settings.interval, system_clock())  # the pace that brought this cycle
        timeline.observe(snap)
        leader = snap.cluster.leader if snap.cluster.reachable else None
        if not shown or shown[-1][1] != leader:
            shown.append((time.monotonic(), leader))
            paced[shown[-1][0]] = was

    def pace() -> float:
        return cadence(timeline, settings.interval, system_clock())

    api = ApiWatch(lab)
    api.start()
    poll = asyncio.create_task(poller.run(on_snapshot, pace))
    rows: list[dict[str, object]] = []
    rng = random.Random(9)
    try:
        for _ in range(switchovers):
            await wait_for(lambda: bool(shown) and shown[-1][1] is not None, 60, "a leader on screen")
            # Start from calm: the cadence back to idle (a leader change keeps it fast for 30 s).
            await calm(lab, pace, settings.interval)
            await asyncio.sleep(settle + rng.uniform(0, settings.interval))  # any point of the cycle
            old = shown[-1][1]
            intervals.append(pace())
            began = time.monotonic()
            await asyncio.to_thread(faults.switchover, lab)
            new = await asyncio.to_thread(lab.leader)
            assert new is not None and new != old
            console_at = await first_shown(shown, new, began)
            api_at = api.named_at(new, began)
            assert api_at is not None
            # Whether the console had already sped up (the old leader's demotion is unrest) or not.
            fast = paced.get(console_at)
            rows.append(
                {"from": old, "to": new, "behind_api_s": round(console_at - api_at, 3), "cadence_s": fast}
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)
        await poller.aclose()
        api.stop.set()
        api.join(timeout=5)
    delays = [float(r["behind_api_s"]) for r in rows]  # type: ignore[arg-type]
    return {
        "switchovers": len(rows),
        "idle_interval_s": settings.interval,
        "interval_at_switchover_s": sorted(set(intervals)),
        "median_s": round(statistics.median(delays), 3),
        "min_s": round(min(delays), 3),
        "max_s": round(max(delays), 3),
        "each_s": delays,
    }


def main() -> int:
    """Parse flags and run."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--base-port", type=int, required=True, help="the lab's --base-port")
    p.add_argument("--state-dir", type=Path, required=True, help="the lab's --state-dir")
    p.add_argument("--switchovers", type=int, default=5)
    p.add_argument("--settle", type=float, default=1.0, help="seconds of calm before each switchover")
    args = p.parse_args()
    layout = saved_layout(args.state_dir) or Layout(base_port=args.base_port, state_dir=args.state_dir)
    lab = Lab(layout, out=io.StringIO())
    print(json.dumps(asyncio.run(measure(lab, args.switchovers, args.settle))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
