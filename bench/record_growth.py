"""What the workload reads add to a recording: stored bytes per snapshot, with and without them.

On a running lab, alternating windows of the real Poller at 1 s: the reads `serve --record` makes
before the workload layer (every pane's but Sessions' and Statements') against all of them (the
server's log is read in both). Each snapshot is stored as a recording stores it (scrubbed JSON,
zlib). Some activity runs meanwhile: pgbench through the writer port.

    .venv/bin/python bench/record_growth.py --config /path/to/lab/pgtop-ha.toml [--seconds 60] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import statistics
import time
from pathlib import Path

from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.snapshot_cli import READS
from pgtop_ha.lab import faults
from pgtop_ha.lab.cli import layout_from
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.needs import Needs
from pgtop_ha.record.recorder import stored_json
from pgtop_ha.record.store import compress
from pgtop_ha.settings import load_settings

WORKLOAD: Needs = frozenset({"sessions", "statements"})


async def window(config: Path, needs: Needs, seconds: float) -> float:
    """Mean stored bytes per snapshot over ``seconds`` of 1 s cycles reading ``needs``."""
    poller = Poller.from_settings(load_settings(config))
    poller.set_needs(needs)
    sizes: list[int] = []
    try:
        await poller.cycle(budget=3.0)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.monotonic()
            snap = await poller.cycle(budget=3.0)
            sizes.append(len(compress(stored_json(snap))))
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    finally:
        await poller.aclose()
    return statistics.mean(sizes)


async def main(args: argparse.Namespace) -> None:
    """Alternate the two windows ``runs`` times under pgbench; print the medians and their ratio."""
    lab = Lab(layout_from(argparse.Namespace(config=args.config)), out=io.StringIO())
    before_reads = frozenset(READS) - WORKLOAD
    load = asyncio.create_task(asyncio.to_thread(faults.load, lab, int(args.seconds * 2 * args.runs + 30)))
    before, after = [], []
    try:
        for _ in range(args.runs):
            before.append(await window(args.config, before_reads, args.seconds))
            after.append(await window(args.config, frozenset(READS), args.seconds))
    finally:
        await load
    b, a = statistics.median(before), statistics.median(after)
    for label, xs in (("without the workload reads", before), ("with them", after)):
        runs = ", ".join(f"{x:,.0f}" for x in xs)
        print(f"stored bytes per snapshot, {label}: {statistics.median(xs):,.0f} ({runs})")
    print(f"growth: {a / b - 1:+.0%}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--runs", type=int, default=3)
    asyncio.run(main(p.parse_args()))
