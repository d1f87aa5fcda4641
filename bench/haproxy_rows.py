"""The console against a shared HAProxy whose stats page lists thousands of servers.

A loopback HTTP server stands in for HAProxy's stats: the lab's writer and reader pools (as the
lab's own HAProxy reports them) followed by N rows of other backends. The real Poller and console
run headless against the lab with that page; for each N it reports the console's CPU per cycle,
its RSS after the run, and the latency of pane switches (the HAProxy pane among them). Example:

    .venv/bin/python bench/haproxy_rows.py --rows 1000,10000,50000 --seconds 20
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import io
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from textual import events

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import Layout, saved_layout
from pgtop_ha.runtime import run, settle_heap
from pgtop_ha.settings import Settings, load_settings
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.screens.monitor import MonitorScreen

KEYS = ("5", "1", "0", "3", "5", "2", "0")  # 5: the HAProxy pane


def page(lab_stats: str, rows: int) -> bytes:
    """The lab's own stats page with ``rows`` rows of other backends after it."""
    head, _, body = lab_stats.partition("\n")
    width = head.count(",")
    filler = []
    for i in range(rows):
        cells = [f"svc{i // 20}", f"srv{i}"] + [""] * (width - 2)
        filler.append(",".join(cells))
    return (head + "\n" + body.rstrip("\n") + "\n" + "\n".join(filler) + "\n").encode()


class Stats(http.server.BaseHTTPRequestHandler):
    """Serves the page set on the server (any path)."""

    def do_GET(self) -> None:
        """The page."""
        body: bytes = self.server.body  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


def rss_mib() -> float:
    """This process's resident memory now."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return round(pages * resource.getpagesize() / 2**20, 1)


async def wait_for(cond: object, within: float, what: str) -> None:
    """Poll ``cond()`` until true; SystemExit naming ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not cond():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def measure(settings: Settings, rows: int, seconds: float) -> dict[str, object]:
    """CPU per cycle, RSS and key latency of the console against a page of ``rows`` more servers."""
    poller = Poller.from_settings(settings)
    app = PgtopApp(settings.console(), poller, settle=settle_heap)
    latencies: list[float] = []
    async with app.run_test(size=(160, 48), notifications=False):
        await wait_for(
            lambda: app.snapshot is not None and bool(app.snapshot.haproxy.servers), 60, "stats read"
        )
        cycles0, cpu0 = poller.cycles, time.process_time()
        samples = [rss_mib()]  # every tenth of the window: flat, or growing
        for _ in range(10):
            await asyncio.sleep(seconds / 10)
            samples.append(rss_mib())
        cycles, cpu = poller.cycles - cycles0, time.process_time() - cpu0
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        handled: list[float] = []
        screen.watch(screen, "view", lambda _: handled.append(time.perf_counter()), init=False)
        driver = app._driver
        assert driver is not None
        for key in KEYS * 3:
            if screen.view == key:
                continue
            event = events.Key(key, key)
            event.set_sender(app)
            before, sent = len(handled), time.perf_counter()
            driver.send_message(event)
            await wait_for(lambda before=before: len(handled) > before, 10, f"key {key}")
            latencies.append((handled[before] - sent) * 1000)
            await asyncio.sleep(0.3)
        snap = app.snapshot
        shown = len(snap.haproxy.servers) if snap else 0
        not_shown = (snap.haproxy.not_shown or 0) if snap else 0
    return {
        "rows": rows,
        "cycles": cycles,
        "cpu_ms_per_cycle": round(cpu * 1000 / max(1, cycles), 1),
        "rss_mib": samples,
        "rss_mib_peak": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "key_median_ms": round(statistics.median(latencies), 1),
        "key_max_ms": round(max(latencies), 1),
        "servers_read": shown,
        "not_shown": not_shown,
    }


async def main_async(args: argparse.Namespace) -> None:
    """One measurement per row count, each printed as a JSON line."""
    layout = saved_layout(args.state_dir) or Layout(base_port=25400, state_dir=args.state_dir)
    Lab(layout, out=io.StringIO())
    base = load_settings(layout.console_config, environ={})
    assert base.haproxy.url is not None
    lab_stats = (await asyncio.to_thread(httpx.get, base.haproxy.url + ";csv", timeout=5)).text
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stats)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/stats"
    settings = base.model_copy(
        update={"haproxy": base.haproxy.model_copy(update={"url": url, "socket": None})}
    )
    server.body = page(lab_stats, args.one)  # type: ignore[attr-defined]
    print(json.dumps(await measure(settings, args.one, args.seconds)), flush=True)
    server.shutdown()


def main() -> int:
    """Parse flags and run."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--state-dir", type=Path, default=Path("/var/lib/pgtop-ha/lab"))
    p.add_argument("--rows", default="1000,10000,50000")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one row count, in a process of its own
    args = p.parse_args()
    if args.one is not None:
        run(main_async(args))
        return 0
    for rows in args.rows.split(","):
        # A process per size: its RSS is that size's alone.
        argv = [sys.executable, __file__, "--state-dir", str(args.state_dir), "--seconds", str(args.seconds)]
        subprocess.run([*argv, "--one", rows], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
