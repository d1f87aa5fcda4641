"""How long after a fault the fleet's alert fires on vmalert, against its `for:` plus one interval.

A synthetic VictoriaMetrics fleet (pgtop_ha/lab/synthetic_fleet.py) with the rule file in vmalert;
once the rules have settled, each run breaks two healthy clusters by importing fresh samples every
second: one's writer pool loses its server (its points read raw series), another's members all
stop leading (its points read the primaries record). The seconds from the first such sample to
the alert's firing are printed beside the target. `--standalone-alerts` loads the file whose alerts
evaluate their own PromQL. Prometheus's timing is `promtool test rules`'
(tests/fleet/test_fleet_rules.py). Example:

    .venv/bin/python bench/fleet_alert_latency.py --interval 15 --runs 3 [--standalone-alerts]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pgtop_ha.judge.fleet_rules import ALERTS
from pgtop_ha.judge.rules import LEADER_NONE, ROUTING_WRITER_POOL
from pgtop_ha.lab.synthetic_fleet import SyntheticVictoria, fault_lines, scope_of
from tests.support.ports import free_port

CLUSTERS = 100


RENEW_S = 30.0  # the whole fleet's samples imported again this often, so none ages out meanwhile


async def _run(
    engine: SyntheticVictoria, run: int, within_s: float, broken: dict[int, str]
) -> dict[str, float]:
    names = {
        ALERTS[ROUTING_WRITER_POOL.id].name: scope_of(2 * run + 1),
        ALERTS[LEADER_NONE.id].name: scope_of(2 * run + 2),
    }
    broken.update({2 * run + 1: ROUTING_WRITER_POOL.id, 2 * run + 2: LEADER_NONE.id})
    fired: dict[str, float] = {}
    began = renewed = time.time()
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        while len(fired) < len(names) and time.time() - began < within_s:
            if time.time() - renewed >= RENEW_S:
                await asyncio.to_thread(engine.renew, CLUSTERS, broken)
                renewed = time.time()
            text = fault_lines(2 * run + 1, 2 * run + 2, int(time.time() * 1000))
            await http.post(f"{engine.url}/api/v1/import/prometheus", content=text.encode())
            alerts = (await http.get(f"{engine.rules_url}/api/v1/alerts")).json()["data"]["alerts"] or []
            for a in alerts:
                name = a["labels"]["alertname"]
                if a["state"] == "firing" and names.get(name) == a["labels"].get("scope"):
                    fired.setdefault(name, time.time() - began)
            await asyncio.sleep(1)
    return fired


def main() -> int:
    """Run the benchmark and print one line per alert."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=int, default=15, help="rule evaluation interval (s)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--standalone-alerts", action="store_true", help="the rule file of `fleet rules --standalone-alerts`"
    )
    args = parser.parse_args()
    engine = SyntheticVictoria(Path(tempfile.mkdtemp(prefix="pgtop-alert-bench-")) / "engine", free_port(3))
    try:
        standalone = args.standalone_alerts
        engine.up(CLUSTERS, {}, rules=True, interval_s=args.interval, standalone_alerts=standalone)
        engine.settled(600)
        broken: dict[int, str] = {}  # every cluster a run broke, kept broken when the fleet is renewed
        runs = [asyncio.run(_run(engine, run, 600, broken)) for run in range(args.runs)]
    finally:
        engine.down()
    for rule in (ROUTING_WRITER_POOL.id, LEADER_NONE.id):
        alert = ALERTS[rule]
        took = [r[alert.name] for r in runs if alert.name in r]
        median = f"{statistics.median(took):.1f} s" if took else "never"
        print(
            f"{alert.name}: fired {median} after its fault (median of {len(took)}: "
            f"{', '.join(f'{t:.1f}' for t in took)}); target for: {alert.for_s} s + one interval "
            f"= {alert.for_s + args.interval} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
