"""Key-press latency of the console against the lab, healthy and with one replica SIGSTOPped.

The real Poller drives the console (headless, at the given size). Each press is a Key event sent
the way the terminal driver sends one; its latency runs from then until the pane switch it asks
for has been made (the MonitorScreen's ``view`` watchers have run, the new pane's rows included;
a pane shown for the first time gets its tables then, so its press lasts until they are filled).
A key press must be handled within 200 ms with a node frozen. ``--sessions N`` lists N more
client sessions on the leader (made up, ages ticking: a lab has not that many connections) and
``--keys a,3`` switches between Sessions and Replication. Example:

    .venv/bin/python bench/key_latency.py --base-port 27400 --state-dir /tmp/perf-lab --presses 50
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from textual import events

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import Layout, saved_layout
from pgtop_ha.models.snapshot import ClusterSnapshot, Process
from pgtop_ha.runtime import run, settle_heap
from pgtop_ha.settings import load_settings
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.screens.monitor import MonitorScreen

KEYS = ("3", "1", "2", "4", "5", "6", "7", "8", "0")  # pane switches: each rebuilds a pane


class Crowded:
    """The Poller, with ``count`` made-up client sessions added to the leader's every snapshot."""

    def __init__(self, poller: Poller, count: int) -> None:
        self.poller = poller
        self.count = count

    def _crowd(self, snap: ClusterSnapshot) -> ClusterSnapshot:
        tick = snap.taken_at.timestamp()
        extra = tuple(
            Process(
                pid=100_000 + i, backend_type="client backend", datname="app", usename="app",
                application_name=f"web-{i % 40}", client_addr=f"10.0.{i // 250}.{i % 250}",
                state="active" if i % 7 == 0 else "idle in transaction" if i % 11 == 0 else "idle",
                query_s=(tick + i) % 900, xact_s=(tick + 3 * i) % 1800, state_s=(tick + i) % 600,
                xmin_age=i * 3, query=f"select * from orders where customer_id = {i}",
            )
            for i in range(self.count)
        )  # fmt: skip
        nodes = tuple(
            n.model_copy(update={"processes": (*n.processes, *extra)}) if n.name == snap.cluster.leader else n
            for n in snap.nodes
        )
        return snap.model_copy(update={"nodes": nodes})

    async def run(
        self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
    ) -> None:
        """The Poller's run, each snapshot crowded."""
        await self.poller.run(lambda snap: on_snapshot(self._crowd(snap)), interval)

    def __getattr__(self, name: str) -> object:
        return getattr(self.poller, name)


async def wait_for(cond: object, within: float, what: str) -> None:
    """Poll ``cond()`` until true; SystemExit naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def scenario(
    lab: Lab,
    size: tuple[int, int],
    presses: int,
    frozen: str | None,
    gap: tuple[float, float] = (0.1, 0.4),
    keys_used: tuple[str, ...] = KEYS,
    sessions: int = 0,
) -> dict[str, object]:
    """Latencies (ms) of ``presses`` pane switches, with ``frozen`` SIGSTOPped when given."""
    settings = load_settings(lab.layout.console_config, environ={})
    # As the console runs: its heap settled after the first snapshot, on its loop (main()).
    poller = Poller.from_settings(settings)
    source = Crowded(poller, sessions) if sessions else poller
    app = PgtopApp(settings.console(), source, settle=settle_heap)  # type: ignore[arg-type]
    latencies: list[float] = []
    keys: list[str] = []
    async with app.run_test(size=size, notifications=False):
        await wait_for(
            lambda: app.snapshot is not None and all(n.error is None for n in app.snapshot.nodes),
            60,
            "every node answering",
        )
        try:
            if frozen is not None:
                await asyncio.to_thread(faults.freeze, lab, frozen)
                await wait_for(
                    lambda: any(
                        n.name == frozen and n.error for n in (app.snapshot.nodes if app.snapshot else ())
                    ),
                    30,
                    f"{frozen} reported as not answering",
                )
            screen = app.screen
            assert isinstance(screen, MonitorScreen)
            handled: list[float] = []
            screen.watch(screen, "view", lambda _: handled.append(time.perf_counter()), init=False)
            driver = app._driver
            assert driver is not None
            rng = random.Random(4)
            for i in range(presses):
                key = keys_used[i % len(keys_used)]  # never the pane shown: each press switches
                event = events.Key(key, key)
                event.set_sender(app)
                before = len(handled)
                sent = time.perf_counter()
                driver.send_message(event)
                await wait_for(lambda before=before: len(handled) > before, 10, f"key {key} handled")
                done = handled[before]
                shown = [screen.panes[p] for p in screen.visible_panes()]
                while not all(p.filled for p in shown):
                    # A first showing: the tables are mounted after the switch (Pane.build);
                    # the press is handled when they are there and filled, looked at every ms.
                    if time.perf_counter() - sent > 10:
                        raise SystemExit(f"view {screen.view} never filled")
                    await asyncio.sleep(0.001)
                    done = time.perf_counter()
                latencies.append((done - sent) * 1000)
                keys.append(key)
                # Land the next press at another point of the 1 s poll cycle.
                await asyncio.sleep(rng.uniform(*gap))
        finally:
            if frozen is not None:
                await asyncio.to_thread(faults.thaw, lab, frozen)
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "scenario": (f"one replica frozen ({frozen})" if frozen else "healthy")
        + (f", {sessions} more sessions" if sessions else ""),
        "size": f"{size[0]}x{size[1]}",
        "presses": len(latencies),
        "gap_s": list(gap),
        "median_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(p99, 2),
        "max_ms": round(ordered[-1], 2),
        "slowest": sorted(zip((round(ms, 1) for ms in latencies), keys, strict=True), reverse=True)[:5],
    }


async def main_async(args: argparse.Namespace) -> None:
    """Run the healthy and the frozen scenario and print one JSON object each."""
    layout = saved_layout(args.state_dir) or Layout(base_port=args.base_port, state_dir=args.state_dir)
    lab = Lab(layout, out=io.StringIO())
    w, h = (int(v) for v in args.size.split("x"))
    gap = (args.gap[0], args.gap[1])
    keys = tuple(args.keys.split(",")) if args.keys else KEYS
    print(json.dumps(await scenario(lab, (w, h), args.presses, None, gap, keys, args.sessions)), flush=True)
    leader = await asyncio.to_thread(lab.leader)
    frozen = next(n for n in layout.names if n != leader)
    print(json.dumps(await scenario(lab, (w, h), args.presses, frozen, gap, keys, args.sessions)), flush=True)


def main() -> int:
    """Parse flags and run."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--base-port", type=int, required=True, help="the lab's --base-port")
    p.add_argument("--state-dir", type=Path, required=True, help="the lab's --state-dir")
    p.add_argument("--presses", type=int, default=50)
    p.add_argument("--size", default="80x24", help="terminal COLSxROWS")
    p.add_argument("--gap", type=float, nargs=2, default=(0.1, 0.4), help="seconds between presses (min max)")
    p.add_argument(
        "--keys", default="", help="keys pressed in turn, comma-separated (default: the panes 0-8)"
    )
    p.add_argument("--sessions", type=int, default=0, help="made-up client sessions added on the leader")
    run(main_async(p.parse_args()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
