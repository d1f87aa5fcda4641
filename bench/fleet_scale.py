"""Fleet view at scale: client CPU of one refresh (parse + rows) and of the screen taking it in.

Synthetic Prometheus answers for N clusters by M members (default 1,000 by 3), served by a loopback
fake Prometheus so the whole read path runs (GET, h11 parse, JSON, rows):

    .venv/bin/python bench/fleet_scale.py [--clusters 1000] [--members 3] [--runs 15]

Reports the median and max client CPU (process time) per refresh, read through HTTP and from bytes
already in memory, and the time the fleet screen takes to show the rows and to answer a key.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusReader, parse_vector
from pgtop_ha.judge.fleet import FleetQueries, FleetRow, build_rows
from tests.fleet.synth import synthetic_bodies
from tests.hostile.fakes import fake_server, json_answer

NOW = 1_700_000_000.0


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms"


async def _http(bodies: dict[str, bytes], runs: int) -> tuple[list[float], int]:
    by_query = {q: bodies[name] for name, q in FleetQueries().all().items()}

    async def handle(got, writer):  # type: ignore[no-untyped-def]
        query = parse_qs(urlsplit(got.target).query)["query"][0]
        await json_answer(by_query[query])(got, writer)

    cpu: list[float] = []
    rows: list[FleetRow] = []
    async with fake_server({"/api/v1/query": handle}) as server:
        source = PrometheusFleet(PrometheusReader(server.url), FleetQueries(), clock=lambda: NOW)
        for _ in range(runs):
            # The fake server runs in this process too: its share is small (it writes prepared bytes).
            start = time.process_time()
            rows = await source.rows()
            cpu.append(time.process_time() - start)
    return cpu, len(rows)


async def _screen(rows: list[FleetRow]) -> dict[str, float]:
    """Seconds the screen's event loop is busy applying rows, and a key's latency with Pilot."""
    import dataclasses

    from pgtop_ha.ui.fleet.app import FleetApp

    class Fixed:
        async def rows(self) -> list[FleetRow]:
            return []

        async def interval(self) -> float:
            return 3600.0

        async def aclose(self) -> None:
            return None

    # A tenth of the rows change one cell (DCS age), as between two scrapes of a quiet fleet.
    changed = [dataclasses.replace(r, dcs_age_s=9.0) if i % 10 == 0 else r for i, r in enumerate(rows)]
    out: dict[str, float] = {}
    app = FleetApp(Fixed())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        for label, batch in (("first fill", rows), ("unchanged", rows), ("10% changed", changed)):
            app.rows = batch
            start = time.process_time()
            app._render_rows()
            out[label] = time.process_time() - start
            await pilot.pause()
        start = time.perf_counter()
        await pilot.press("down")
        out["key (Pilot, includes its own wait)"] = time.perf_counter() - start
    return out


def main() -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bodies = synthetic_bodies(args.clusters, args.members, now=NOW)
    size = sum(len(b) for b in bodies.values())
    print(
        f"{args.clusters} clusters x {args.members} members: {len(bodies)} queries, "
        f"{size / 1e6:.1f} MB of JSON"
    )
    local: list[float] = []
    rows: list[FleetRow] = []
    for _ in range(args.runs):
        start = time.process_time()
        rows = build_rows({k: parse_vector(v) for k, v in bodies.items()}, now=NOW)
        local.append(time.process_time() - start)
    print(f"parse + rows from memory: {_ms(local)} CPU ({len(rows)} rows)")
    http, n = asyncio.run(_http(bodies, args.runs))
    print(f"whole refresh over HTTP (GET, h11, JSON, rows): {_ms(http)} CPU ({n} rows)")
    for label, seconds in asyncio.run(_screen(rows)).items():
        print(f"screen, {label}: {seconds * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
