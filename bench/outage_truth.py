"""The write outage a client sees beside the one the console's stopwatch reports, on the lab.

A client INSERTs through HAProxy's writer port every 0.1 s, each on a new connection, while
`pgtop-ha record` runs beside it; then a fault (switchover, failover with the leader's Patroni
stopped, kill -9 of the leader's postmaster, or SIGSTOP of all the leader's processes, thawed once
the client writes again). The client's outage runs from its first failed write until writes
succeed and keep succeeding (the end of the first success after its last failure); the
console's is the stopwatch recomputed from the recording by `pgtop-ha events --json`.
Example (the lab up at its default state dir):

    .venv/bin/python bench/outage_truth.py --runs 3 --scenarios switchover,failover,crash,freeze
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, OPERATOR_USER, SUPERUSER, Layout, saved_layout

PERIOD_S = 0.1
TABLE = "outage_truth"
PGTOP = str(Path(sys.executable).with_name("pgtop-ha"))


class Client(threading.Thread):
    """Starts a write every PERIOD_S, each on a new connection; keeps (started, ended, ok) of each."""

    def __init__(self, lab: Lab) -> None:
        super().__init__(name="client", daemon=True)
        self.lab = lab
        self.attempts: list[tuple[datetime, datetime, bool]] = []
        self.stop = threading.Event()

    async def _write(self) -> bool:
        try:
            conn = await asyncpg.connect(
                host="127.0.0.1",
                port=self.lab.layout.writer_port,
                user=SUPERUSER,
                database=DBNAME,
                passfile=str(self.lab.layout.pgpass),
                timeout=1.0,
                command_timeout=1.0,
            )
        except (OSError, asyncpg.PostgresError, TimeoutError):
            return False
        try:
            await conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (at timestamptz)")
            await conn.execute(f"INSERT INTO {TABLE} VALUES (now())")
            return True
        except (OSError, asyncpg.PostgresError, TimeoutError):
            return False
        finally:
            conn.terminate()

    async def _one(self) -> None:
        at = datetime.now(UTC)
        ok = await self._write()
        self.attempts.append((at, datetime.now(UTC), ok))

    async def _loop(self) -> None:
        # A write is started every PERIOD_S whether the last has finished or not, as clients do.
        tasks: set[asyncio.Task[None]] = set()
        next_at = time.monotonic()
        while not self.stop.is_set():
            task = asyncio.create_task(self._one())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_at += PERIOD_S
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.gather(*tasks)

    def run(self) -> None:
        """Write until stopped."""
        asyncio.run(self._loop())

    def span(self, after: datetime) -> tuple[datetime, datetime] | None:
        """From the first failed write started at or after ``after`` to the end of the first success
        after which writes kept succeeding (None while the last attempt failed)."""
        done = sorted(self.attempts)
        start = next((at for at, _, ok in done if at >= after and not ok), None)
        if start is None:
            return None
        last_fail = max(at for at, _, ok in done if at >= start and not ok)
        end = next((e for at, e, ok in done if at > last_fail and ok), None)
        return None if end is None else (start, end)

    def outage(self, after: datetime) -> float | None:
        """Seconds from the first failed write at or after ``after`` until writes kept succeeding."""
        span = self.span(after)
        return None if span is None else round((span[1] - span[0]).total_seconds(), 3)

    def writing(self) -> bool:
        """The last three writes succeeded."""
        return len(self.attempts) >= 3 and all(ok for _, _, ok in self.attempts[-3:])


def wait(cond: Any, within: float, what: str) -> None:
    """Poll ``cond`` until true, or fail naming ``what``."""
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"outage_truth: no {what} within {within:.0f}s")
        time.sleep(0.2)


async def _grant(lab: Lab) -> None:
    """The table the client writes, and the console's write probe allowed to INSERT into it."""
    conn = await asyncpg.connect(
        host="127.0.0.1",
        port=lab.layout.writer_port,
        user=SUPERUSER,
        database=DBNAME,
        passfile=str(lab.layout.pgpass),
    )
    try:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (at timestamptz)")
        await conn.execute(f"GRANT INSERT ON {TABLE} TO {OPERATOR_USER}")
    finally:
        await conn.close()


def one_run(
    lab: Lab, scenario: str, config: Path, settle: float, keep: Path | None, probe: bool
) -> dict[str, Any]:
    """One fault with the client and a recorder beside it: both figures (and the write probe's)."""
    wait(lab.healthy, 180, "healthy lab")
    if probe:
        asyncio.run(_grant(lab))
    client = Client(lab)
    client.start()
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "run.pgtop"
        extra = ["--operator", "--probe-writes", TABLE] if probe else []
        recorder = subprocess.Popen(
            [PGTOP, "--config", str(config), "record", *extra, str(rec)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait(client.writing, 30, "successful client writes")
            time.sleep(settle)  # a calm start: the recorder's cadence back to idle
            began = datetime.now(UTC)
            old = lab.leader()
            assert old is not None
            if scenario == "switchover":
                faults.switchover(lab)
            elif scenario == "failover":
                faults.stop_patroni(lab, old)
            elif scenario == "freeze":
                faults.freeze(lab, old)
            else:
                faults.kill_primary(lab)
            try:
                wait(lambda: client.outage(began) is not None, 120, "end of the client's outage")
            finally:
                if scenario == "freeze":
                    faults.thaw(lab, old)
            time.sleep(15)  # the recorder sees HAProxy settle and the stopwatch close
            wait(client.writing, 30, "client writes that keep succeeding")
        finally:
            os.kill(recorder.pid, signal.SIGINT)
            recorder.wait(timeout=30)
            client.stop.set()
            client.join(timeout=10)
        if scenario == "failover":
            faults.start_patroni(lab, old)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            kept = keep / f"{scenario}-{began:%H%M%S}.pgtop"
            kept.write_bytes(rec.read_bytes())
        out = subprocess.run(
            [PGTOP, "events", str(rec), "--json"], capture_output=True, text=True, check=True
        ).stdout
    reports = [r for r in json.loads(out)["failovers"] if datetime.fromisoformat(r["lost_at"]) >= began] or [
        r for r in json.loads(out)["failovers"] if r.get("write_outage_to")
    ]
    first = reports[0] if reports else {}
    span = client.span(began)
    return {
        "scenario": scenario,
        "client_s": client.outage(began),
        "console_s": first.get("write_outage_s"),
        "probe_s": first.get("client_write_outage_s"),
        "client": [f"{t:%H:%M:%S.%f}"[:12] for t in span] if span else None,
        "console": [first.get("write_outage_from"), first.get("write_outage_to")],
    }


def main() -> int:
    """Parse flags, run each scenario, print each run and the medians as JSON lines."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--state-dir", type=Path, default=Path("/var/lib/pgtop-ha/lab"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--scenarios", default="switchover,failover,crash,freeze")
    p.add_argument("--settle", type=float, default=5.0)
    p.add_argument("--keep", type=Path, help="keep each run's recording in this folder")
    p.add_argument("--probe-writes", action="store_true", help="the console's write probe on (operator)")
    args = p.parse_args()
    layout = saved_layout(args.state_dir) or Layout(base_port=25400, state_dir=args.state_dir)
    lab = Lab(layout, out=io.StringIO())
    for scenario in args.scenarios.split(","):
        rows = [
            one_run(lab, scenario, layout.console_config, args.settle, args.keep, args.probe_writes)
            for _ in range(args.runs)
        ]
        for row in rows:
            print(json.dumps(row), flush=True)
        pairs = [(r["client_s"], r["console_s"]) for r in rows if None not in (r["client_s"], r["console_s"])]
        summary = {
            "scenario": scenario,
            "runs": len(rows),
            "client_median_s": statistics.median(c for c, _ in pairs) if pairs else None,
            "console_median_s": statistics.median(k for _, k in pairs) if pairs else None,
            "difference_median_s": statistics.median(round(k - c, 3) for c, k in pairs) if pairs else None,
            "missing": len(rows) - len(pairs),
        }
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
