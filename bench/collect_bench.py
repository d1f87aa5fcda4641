"""Benchmark of the read path against a running lab (on demand, not in CI).

Per scenario it reports, per cycle: wall latency (median, p99), client CPU, DB time per
node-cycle (pg_stat_statements), PostgreSQL round trips per node-cycle and HTTP requests.

    .venv/bin/python bench/collect_bench.py --config /path/to/lab/pgtop-ha.toml [--seconds 30]

Scenarios: the lab's 3 nodes (full, and PostgreSQL only), then 100 node entries (the lab's
nodes repeated), healthy and with one replica frozen (SIGSTOP, thawed in a finally).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import asyncpg

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cli import layout_from
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import SUPERUSER, Layout
from pgtop_ha.settings import NodeSettings, Settings, load_settings

STATEMENT_LIKE = "%select json_build_object(%"  # the cycle's statement, after its CTE


@dataclass
class Result:
    """Figures of one scenario."""

    scenario: str
    entries: int
    cycles: int
    wall_median_ms: float
    wall_p99_ms: float
    cpu_ms_per_cycle: float
    cpu_share_of_core: float
    db_ms_per_node_cycle: dict[str, float]
    db_statement_variants: dict[str, str]
    round_trips_per_node_cycle: float
    http_requests_per_cycle: float
    healthy_query_median_ms: float | None
    healthy_query_p99_ms: float | None
    stale_cycles_of_healthy_nodes: int


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def _superuser(layout: Layout, index: int) -> asyncpg.Connection:
    return await asyncpg.connect(
        host="127.0.0.1",
        port=layout.pg_port(index),
        user=SUPERUSER,
        database="labdb",
        passfile=str(layout.pgpass),
    )


async def _reset_statements(layout: Layout, skip: str | None) -> None:
    for i, name in enumerate(layout.names):
        if name == skip:
            continue
        conn = await _superuser(layout, i)
        try:
            await conn.execute("select pg_stat_statements_reset()")
        finally:
            await conn.close()


async def _db_time(
    layout: Layout, skip: str | None, role: str | None
) -> tuple[dict[str, float], dict[str, str]]:
    """Mean server ms per node-cycle per node, and each statement variant's calls and mean."""
    out: dict[str, float] = {}
    variants: dict[str, str] = {}
    for i, name in enumerate(layout.names):
        if name == skip:
            continue
        conn = await _superuser(layout, i)
        try:
            # Only the monitoring role's statements (the console's), not the superuser's own.
            rows = await conn.fetch(
                "select queryid, calls, total_exec_time as ms from pg_stat_statements "
                "where query like $1 and ($2::text is null or userid = $2::regrole) order by calls desc",
                STATEMENT_LIKE,
                role,
            )
        finally:
            await conn.close()
        calls = sum(int(r["calls"]) for r in rows)
        total = sum(float(r["ms"]) for r in rows)
        out[name] = round(total / calls, 3) if calls else float("nan")
        variants[name] = "; ".join(f"{r['calls']} calls {float(r['ms']) / r['calls']:.3f} ms" for r in rows)
    return out, variants


def _repeated(settings: Settings, layout: Layout, entries: int) -> Settings:
    nodes = []
    for k in range(entries):
        i = k % len(layout.names)
        nodes.append(
            NodeSettings(
                name=f"{layout.names[i]}-{k:03d}",
                host="127.0.0.1",
                port=layout.pg_port(i),
                patroni_url=layout.patroni_url(i),
            )
        )
    return settings.model_copy(update={"nodes": tuple(nodes)})


def _pg_only(settings: Settings, layout: Layout) -> Settings:
    nodes = tuple(
        NodeSettings(name=n, host="127.0.0.1", port=layout.pg_port(i)) for i, n in enumerate(layout.names)
    )
    haproxy = settings.haproxy.model_copy(update={"url": None, "socket": None})
    patroni = settings.patroni.model_copy(update={"urls": ()})
    return settings.model_copy(update={"nodes": nodes, "haproxy": haproxy, "patroni": patroni})


async def _scenario(
    name: str,
    settings: Settings,
    layout: Layout,
    seconds: float,
    frozen: str | None = None,
    lab: Lab | None = None,
    memory: bool = True,
) -> Result:
    poller = Poller.from_settings(settings)
    poller.set_needs(frozenset({"memory"}) if memory else frozenset())
    interval = settings.interval
    try:
        await poller.cycle()  # connect and probe outside the measurement
        await poller.cycle()
        if frozen and lab is not None:
            faults.freeze(lab, frozen)
        await _reset_statements(layout, frozen)
        trips0 = poller.round_trips()
        http0 = poller.patroni.requests + poller.haproxy_requests
        walls: list[float] = []
        cpus: list[float] = []
        queries: list[float] = []
        stale = 0
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while loop.time() < end:
            started = loop.time()
            cpu0 = time.process_time()
            snap = await poller.cycle(budget=interval * 0.9)
            cpus.append(time.process_time() - cpu0)
            walls.append(loop.time() - started)
            for slot_name, slot in poller.membership.members.items():  # bench only: per-node timings
                if frozen and slot_name.startswith(frozen):
                    continue
                node = snap.node(slot_name)
                if node is not None and node.error:
                    stale += 1
                if slot.node is not None and slot.node.last_query_s is not None:
                    queries.append(slot.node.last_query_s)
            await asyncio.sleep(max(0.0, started + interval - loop.time()))
        trips1 = poller.round_trips()
        http1 = poller.patroni.requests + poller.haproxy_requests
        db_time, variants = await _db_time(layout, frozen, settings.postgres.user)
    finally:
        if frozen and lab is not None:
            faults.thaw(lab, frozen)
        await poller.aclose()
    cycles = len(walls)
    healthy = [n for n in trips1 if not (frozen and n.startswith(frozen))]
    per_node = [(trips1[n] - trips0.get(n, 0)) / cycles for n in healthy]
    return Result(
        scenario=name,
        entries=len(trips1),
        cycles=cycles,
        wall_median_ms=round(statistics.median(walls) * 1000, 2),
        wall_p99_ms=round(_p99(walls) * 1000, 2),
        cpu_ms_per_cycle=round(statistics.mean(cpus) * 1000, 2),
        cpu_share_of_core=round(sum(cpus) / (cycles * interval), 4),
        db_ms_per_node_cycle=db_time,
        db_statement_variants=variants,
        round_trips_per_node_cycle=round(statistics.mean(per_node), 3),
        http_requests_per_cycle=round((http1 - http0) / cycles, 2),
        healthy_query_median_ms=round(statistics.median(queries) * 1000, 3) if queries else None,
        healthy_query_p99_ms=round(_p99(queries) * 1000, 3) if queries else None,
        stale_cycles_of_healthy_nodes=stale,
    )


async def main_async(args: argparse.Namespace) -> list[Result]:
    """Run every scenario and return the figures."""
    settings = load_settings(args.config, environ={})
    layout = layout_from(argparse.Namespace(config=args.config))  # as `pgtop-ha lab --config` finds it
    lab = Lab(layout, out=io.StringIO())
    leader = lab.leader()
    victim = next(n for n in layout.names if n != leader)
    results = [await _scenario("3 nodes, full (pg_monitor)", settings, layout, args.seconds)]
    if args.three_only:
        return results
    results += [
        await _scenario("3 nodes, PostgreSQL only", _pg_only(settings, layout), layout, args.seconds),
        await _scenario(
            f"{args.entries} entries, healthy",
            _repeated(settings, layout, args.entries),
            layout,
            args.seconds,
        ),
        await _scenario(
            f"{args.entries} entries, healthy, process memory off",
            _repeated(settings, layout, args.entries),
            layout,
            args.seconds,
            memory=False,
        ),
        await _scenario(
            f"{args.entries} entries, {victim} frozen",
            _repeated(settings, layout, args.entries),
            layout,
            args.seconds,
            frozen=victim,
            lab=lab,
        ),
    ]
    return results


def main() -> None:
    """Parse arguments, run, print a JSON list of results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the lab's pgtop-ha.toml")
    parser.add_argument("--seconds", type=float, default=30.0, help="per scenario")
    parser.add_argument("--entries", type=int, default=100, help="node entries of the big runs")
    parser.add_argument("--three-only", action="store_true", help="only the lab's 3 nodes, full")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    payload: list[dict[str, Any]] = [asdict(r) for r in results]
    print(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
