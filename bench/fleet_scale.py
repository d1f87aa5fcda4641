"""The fleet view at 1k, 10k and 50k clusters, on Prometheus and on VictoriaMetrics.

For each size and engine, pgtop_ha/lab/synthetic_fleet.py loads N clusters of 3 members (a fault
on one cluster in 500) with the fleet's rules evaluated every --interval, then this script measures,
over several refreshes, both ways the fleet reads: live PromQL, and from the recorded rules:
- the bytes a refresh reads (every answer of both rounds);
- the client CPU of a refresh (process time here: HTTP, JSON, rows), and its wall time (mostly the
  server's evaluation): the wall time of a full screen;
- the rules' evaluation time, as the engine reports it (Prometheus: each evaluation of a group;
  vmalert: its iterations' sum and count), after the recorded reads and before the live ones:
  the mean of --evaluations of the group evaluated every --interval after its first, and the
  hourly group's;
- the fleet screen: its first fill, and a key's latency (Pilot) while refreshes run.
The reference is the previous design's read, the member series of every cluster (a plain
selector), asked of the same engine in the same run. Example:

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
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusError, PrometheusReader
from pgtop_ha.judge.fleet import CRIT, RULES, FleetPage
from pgtop_ha.judge.fleet_rules import GROUP, HOURLY_GROUP
from pgtop_ha.lab.synthetic_fleet import FAULTS, SyntheticPrometheus, SyntheticVictoria

ENGINES: dict[str, type[SyntheticPrometheus] | type[SyntheticVictoria]] = {
    "prometheus": SyntheticPrometheus,
    "victoria": SyntheticVictoria,
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def _refreshes(
    url: str, runs: int, recorded: bool, interval: float
) -> tuple[list[float], list[float], FleetPage]:
    reader = PrometheusReader(url, timeout=300)
    source = PrometheusFleet(reader, FleetQueries(), interval=interval, prefer_recorded=recorded)
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
    assert page.source.startswith("recorded") is recorded, page.source
    return cpu, wall, page


def _iterations(rules_url: str, vmalert: bool) -> dict[str, tuple[float, float]]:
    """Per group: (an evaluation's stamp or vmalert's iteration count, the seconds it took or summed)."""
    import httpx

    if not vmalert:
        groups = httpx.get(f"{rules_url}/api/v1/rules", timeout=30, trust_env=False).json()["data"]["groups"]
        return {
            g["name"]: (_stamp(g.get("lastEvaluation", "")), float(g.get("evaluationTime", 0)))
            for g in groups
        }
    # vmalert's per-rule times overlap; its iteration summary (sum, count) is the group's own.
    out: dict[str, list[float]] = {}
    for line in httpx.get(f"{rules_url}/metrics", timeout=30, trust_env=False).text.splitlines():
        for kind, slot in (("_count{", 0), ("_sum{", 1)):
            if line.startswith(f"vmalert_iteration_duration_seconds{kind}"):
                group = line.split('group="', 1)[1].split('"', 1)[0]
                out.setdefault(group, [0.0, 0.0])[slot] = float(line.rsplit(" ", 1)[1])
    return {group: (count, total) for group, (count, total) in out.items()}


def _stamp(text: str) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return 0.0


def _evaluation_s(rules_url: str, vmalert: bool, evaluations: int, within_s: float) -> dict[str, float]:
    """Each group's evaluation in the steady state: the mean of the next ``evaluations`` of the main
    group (the first, which creates every recorded series, is over by now), as the engine reports
    them; the hourly group's last one."""
    began = time.monotonic()
    first = last = _iterations(rules_url, vmalert)
    start = first.get(GROUP, (0.0, 0.0))[0]
    seen: dict[float, float] = {}  # Prometheus: each later evaluation of the main group, by its stamp
    while time.monotonic() - began < within_s:
        last = _iterations(rules_url, vmalert)
        mark, took = last.get(GROUP, (0.0, 0.0))
        if not vmalert and mark > start:
            seen[mark] = took
        if (mark - start if vmalert else len(seen)) >= evaluations:
            break
        time.sleep(0.5)
    out: dict[str, float] = {}
    for group, (mark, took) in last.items():
        if not vmalert:
            out[group] = statistics.mean(seen.values()) if group == GROUP and seen else took
            continue
        count0, sum0 = first.get(group, (0.0, 0.0))
        # Iterations since the first read: their mean; none yet (the hourly group): every one so far.
        out[group] = (took - sum0) / (mark - count0) if mark > count0 else took / max(mark, 1.0)
    return out


async def _reference(url: str) -> str:
    """The old read: every member's series of one metric, for every cluster (bytes, client CPU)."""
    reader = PrometheusReader(url, timeout=300)
    c = time.process_time()
    try:
        samples, body = await reader._query("max by (scope, name, instance) (patroni_postgres_running)")
    except PrometheusError as exc:
        return f"refused: {str(exc).split(': ', 1)[-1]}"
    finally:
        await reader.aclose()
    if not samples:
        raise SystemExit("the reference read no series: the samples aged past the lookback; run fewer --runs")
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
    parser.add_argument("--engines", default="prometheus,victoria")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--interval", type=int, default=5, help="scrape and rule evaluation interval (s)")
    parser.add_argument("--evaluations", type=int, default=3, help="main group evaluations averaged")
    parser.add_argument(
        "--standalone-alerts", action="store_true", help="the rule file of `fleet rules --standalone-alerts`"
    )
    args = parser.parse_args()
    print("| engine | clusters | read | bytes/refresh | client CPU/refresh (median) | full screen (median) "
          "| interval | rules' evaluation (main / hourly group) | reference: one metric of every member "
          "| first fill | key median / max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.engines.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            faults = {i: FAULTS[(i // 500) % len(FAULTS)] for i in range(0, size, 500)}
            port = _port()
            engine = ENGINES[name](Path(tempfile.mkdtemp(prefix="pgtop-fleet-bench-")) / "engine", port)
            try:
                took = engine.up(
                    size,
                    faults,
                    rules=True,
                    interval_s=args.interval,
                    standalone_alerts=args.standalone_alerts,
                )
                settled = engine.settled(900)
                rules_url = engine.rules_url
                # The slow live reads last: the samples are seen for minutes after the backfill.
                recorded_way = asyncio.run(_refreshes(engine.url, args.runs, True, args.interval))
                # The rules alone: the live reads below would take a core from them.
                evaluation = _evaluation_s(
                    rules_url, name != "prometheus", args.evaluations, args.evaluations * args.interval * 3
                )
                reference = asyncio.run(_reference(engine.url))
                measured = {True: recorded_way}
                try:
                    measured[False] = asyncio.run(_refreshes(engine.url, args.runs, False, args.interval))
                except PrometheusError as exc:
                    # The engine's own query timeout: the live ranking is what the rules replace.
                    live_failed = str(exc).split(": ", 1)[-1]
                else:
                    live_failed = ""
                crit = sum(1 for rule in faults.values() if RULES[rule].level == CRIT)
                for recorded, (_, _, page) in measured.items():
                    # More crit than faults: healthy clusters' samples aged out, graded as gone.
                    if page.counts.total != size or page.counts.crit > crit:
                        raise SystemExit(
                            f"{name}, {size:,} clusters: {page.counts} read "
                            f"{'recorded' if recorded else 'live'}, the samples aged past the lookback; "
                            "run fewer --runs"
                        )
            finally:
                engine.down()
            if live_failed:
                print(f"| {name} | {size:,} | live | failed: {live_failed} | | | | | | | |", flush=True)
            for recorded, (cpu, wall, page) in measured.items():
                screen = asyncio.run(_screen(page))
                print(
                    f"| {name} | {size:,} | {'recorded' if recorded else 'live'} "
                    f"| {page.bytes_read / 1e3:.0f} kB | {statistics.median(cpu) * 1e3:.0f} ms "
                    f"| {statistics.median(wall):.2f} s "
                    f"| {args.interval} s "
                    f"| {evaluation.get(GROUP, 0):.1f} s / {evaluation.get(HOURLY_GROUP, 0):.1f} s "
                    f"| {reference} "
                    f"| {screen['first fill (s)'] * 1e3:.0f} ms "
                    f"| {screen['key median (s)'] * 1e3:.0f} / {screen['key max (s)'] * 1e3:.0f} ms |",
                    flush=True,
                )
            print(
                f"  ({name}: load {took:.0f} s; rules settled {settled:.0f} s after; {page.counts}, "
                f"{crit} crit faults; {len(page.rows)} rows; "
                f"groups {', '.join(f'{k} {v:.1f} s' for k, v in sorted(evaluation.items()))})",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
