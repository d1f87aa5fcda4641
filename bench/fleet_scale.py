"""The fleet view at 1k, 10k and 50k clusters: a real Prometheus over a synthetic fleet.

For each size, pgtop_ha/lab/synthetic_fleet.py backfills N clusters of 3 members (with a fault on
one cluster in 500) into a real Prometheus, then this script measures, over several refreshes:
- the bytes a refresh reads (every answer of both rounds);
- the client CPU of a refresh (process time here: HTTP, JSON, rows), and its wall time (mostly the
  server's evaluation);
- the fleet screen: its first fill, and a key's latency (Pilot) while refreshes run.
The reference is the previous design's read, the member series of every cluster (a plain
selector), asked of the same Prometheus in the same run. Example:

    .venv/bin/python bench/fleet_scale.py --sizes 1000,10000,50000 --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusError, PrometheusReader
from pgtop_ha.judge.fleet import FleetPage, FleetQueries
from pgtop_ha.lab.synthetic_fleet import FAULTS, SyntheticPrometheus


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def _refreshes(url: str, runs: int) -> tuple[list[float], list[float], FleetPage]:
    source = PrometheusFleet(PrometheusReader(url, timeout=300), FleetQueries())
    cpu: list[float] = []
    wall: list[float] = []
    page = None
    try:
        for _ in range(runs):
            c, w = time.process_time(), time.perf_counter()
            page = await source.refresh()
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - w)
    finally:
        await source.aclose()
    assert page is not None
    return cpu, wall, page


async def _reference(url: str) -> str:
    """The old read: every member's series of one metric, for every cluster (bytes, client CPU)."""
    reader = PrometheusReader(url, timeout=300)
    c = time.process_time()
    try:
        _, body = await reader._query("max by (scope, name, instance) (patroni_postgres_running)")
    except PrometheusError as exc:
        return f"refused: {str(exc).split(': ', 1)[-1]}"
    finally:
        await reader.aclose()
    return f"{len(body) / 1e6:.1f} MB, {(time.process_time() - c) * 1e3:.0f} ms CPU"


async def _screen(page: FleetPage) -> dict[str, float]:
    from pgtop_ha.ui.fleet.app import FleetApp

    class Fixed:
        async def refresh(self, filter_text: str = "") -> FleetPage:
            await asyncio.sleep(0)
            return page

        async def interval(self) -> float:
            return 0.5

        async def aclose(self) -> None:
            return None

    out: dict[str, float] = {}
    app = FleetApp(Fixed())
    start = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        while app.refreshes == 0:
            await pilot.pause(0.01)
        out["first fill (s)"] = time.perf_counter() - start  # the app's start included
        keys: list[float] = []
        for key in ["down"] * 20 + ["up"] * 20:
            start = time.perf_counter()
            await pilot.press(key)
            keys.append(time.perf_counter() - start)
        out["key median (s)"] = statistics.median(keys)
        out["key max (s)"] = max(keys)
    return out


def main() -> int:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print("| clusters | bytes/refresh | client CPU/refresh (median) | wall/refresh (median) "
          "| reference: one metric of every member | first fill | key median / max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        faults = {i: FAULTS[(i // 500) % len(FAULTS)] for i in range(0, size, 500)}
        prom = SyntheticPrometheus(Path(tempfile.mkdtemp(prefix="pgtop-fleet-bench-")) / "prom", _port())
        try:
            took = prom.up(size, faults)
            cpu, wall, page = asyncio.run(_refreshes(prom.url, args.runs))
            reference = asyncio.run(_reference(prom.url))
        finally:
            prom.down()
        screen = asyncio.run(_screen(page))
        print(
            f"| {size:,} | {page.bytes_read / 1e3:.0f} kB | {statistics.median(cpu) * 1e3:.0f} ms "
            f"| {statistics.median(wall):.1f} s | {reference} "
            f"| {screen['first fill (s)'] * 1e3:.0f} ms "
            f"| {screen['key median (s)'] * 1e3:.0f} / {screen['key max (s)'] * 1e3:.0f} ms |",
            flush=True,
        )
        print(f"  (backfill {took:.0f} s; counts {page.counts}; {len(page.rows)} rows)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
