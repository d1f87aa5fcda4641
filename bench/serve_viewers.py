"""What viewers cost the cluster: one console, N consoles, or one `serve` with N attached viewers.

Each scenario runs for a window on the lab while the cluster is idle. Measured over the window:
- the monitoring role's statements and server time per second (pg_stat_statements, every node);
- REST requests per second, as Patroni logs them (the lab logs patroni.api at DEBUG);
- the CPU of the serve's process tree and of each viewer's (psutil, children included).
Viewers run as a user runs them: `pgtop-ha attach` in a tmux pane of 120x40 each, browser tabs
in one headless Chromium. Example:

    .venv/bin/python bench/serve_viewers.py --config /var/lib/pgtop-ha/lab/pgtop-ha.toml \
        --seconds 60 --viewers 1,5,20 --tabs 5
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.console_cpu import tree_times
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import MONITOR_USER, saved_layout

TMUX = ["tmux", "-L", f"pgtop-serve-bench-{os.getpid()}"]
TABS = """
import asyncio, signal, sys
from tests.support.browser import browser
async def main(url, n, hold):
    # SIGTERM ends the wait, so the browser is closed on the way out.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    async with browser() as browse:
        for _ in range(n):
            await browse(url)
        await asyncio.sleep(hold)
try:
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))
except asyncio.CancelledError:
    pass
"""
PGTOP = [sys.executable, "-m", "pgtop_ha"]
API_LINE = re.compile(rb'API thread: \S+ - - "(?P<method>[A-Z]+) (?P<path>/[a-z]*)')
# What a console asks; HAProxy's health checks (/primary, /replica) are the same in every scenario.
CONSOLE_PATHS = {b"/cluster", b"/patroni", b"/history", b"/config", b"/metrics"}


@dataclass(frozen=True)
class Window:
    """What one scenario cost over its window."""

    name: str
    statements_s: float
    server_ms_s: float
    gets_s: float
    serve_cpu_pct: float | None
    viewer_cpu_pct: float | None


def statements(lab: Lab) -> tuple[int, float]:
    """The monitoring role's calls and total execution time (ms), summed over every node."""
    calls, ms = 0, 0.0
    for i in range(len(lab.layout.names)):
        out = lab.psql(
            "SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time), 0) FROM pg_stat_statements "
            f"WHERE userid = '{MONITOR_USER}'::regrole",
            i,
        )
        c, t = out.split("|")
        calls, ms = calls + int(c), ms + float(t)
    return calls, ms


def logs(lab: Lab) -> list[Path]:
    """Each member's Patroni log."""
    return [lab.layout.log_dir / f"patroni-{n}" / "patroni.log" for n in lab.layout.names]


def sizes(paths: list[Path]) -> list[int]:
    return [p.stat().st_size if p.exists() else 0 for p in paths]


def gets_since(paths: list[Path], offsets: list[int]) -> int:
    """REST GETs of a console's paths that Patroni logged after ``offsets``."""
    total = 0
    for path, offset in zip(paths, offsets, strict=True):
        with open(path, "rb") as fh:
            fh.seek(offset)
            total += sum(1 for m in API_LINE.finditer(fh.read()) if m.group("path") in CONSOLE_PATHS)
    return total


@contextlib.contextmanager
def tmux() -> Iterator[None]:
    subprocess.run([*TMUX, "new-session", "-d", "-s", "keeper", "sleep 86400"], check=True)
    try:
        yield
    finally:
        subprocess.run([*TMUX, "kill-server"], check=False, capture_output=True)


def pane(name: str, argv: list[str]) -> int:
    """A detached 120x40 tmux session running ``argv``; the pid of its process."""
    command = "exec " + " ".join(argv)
    subprocess.run([*TMUX, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", command], check=True)
    asked = [*TMUX, "display", "-p", "-t", name, "#{pane_pid}"]
    out = subprocess.run(asked, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def kill(name: str) -> None:
    subprocess.run([*TMUX, "kill-session", "-t", name], check=False, capture_output=True)


def measure(
    lab: Lab, name: str, seconds: float, serve: int | None, viewers: list[int], nested: bool = False
) -> Window:
    """One window; ``nested``: the viewers run under serve (browser tabs), so are not counted twice."""
    time.sleep(10)  # warm-up: every process connected, every first read done
    paths = logs(lab)
    offsets, (calls0, ms0) = sizes(paths), statements(lab)
    cpu0 = [tree_times(p) for p in viewers]
    serve0 = tree_times(serve) if serve else 0.0
    began = time.monotonic()
    time.sleep(seconds)
    span = time.monotonic() - began
    calls1, ms1 = statements(lab)
    gets = gets_since(paths, offsets)
    cpu = [tree_times(p) - c for p, c in zip(viewers, cpu0, strict=True)]
    serve_cpu = tree_times(serve) - serve0 - (sum(cpu) if nested else 0.0) if serve else None
    return Window(
        name,
        (calls1 - calls0) / span,
        (ms1 - ms0) / span,
        gets / span,
        100 * serve_cpu / span if serve_cpu is not None else None,
        100 * sum(cpu) / len(cpu) / span if cpu else None,
    )


def start_serve(config: Path, sock: Path, web: str | None) -> tuple[subprocess.Popen[str], str | None]:
    argv = [*PGTOP, "--config", str(config), "serve", "--socket", str(sock)]
    if web:
        argv += ["--web", web]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = None
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "browser view: " in line:
            url = line.split("browser view: ", 1)[1].strip()
        if ("serving on" in line and not web) or url:
            break
    return proc, url


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def run(args: argparse.Namespace) -> list[Window]:
    layout = saved_layout(args.config.parent)
    assert layout is not None, f"no lab at {args.config.parent}"
    lab = Lab(layout)
    out: list[Window] = []
    tmp = Path(tempfile.mkdtemp(prefix="pgtop-serve-bench-"))
    console = [*PGTOP, "--config", str(args.config), "--read-only"]
    with tmux():
        for n in [1, max(args.viewer_counts)] if "consoles" in args.scenarios else []:
            pids = [pane(f"console-{i}", console) for i in range(n)]
            out.append(
                measure(
                    lab, f"{n} console{'s' if n > 1 else ''}, each its own poller", args.seconds, None, pids
                )
            )
            for i in range(n):
                kill(f"console-{i}")
        for n in args.viewer_counts if "attach" in args.scenarios else []:
            sock = tmp / f"serve-{n}.sock"
            proc, _ = start_serve(args.config, sock, None)
            pids = [pane(f"attach-{i}", [*PGTOP, "attach", str(sock)]) for i in range(n)]
            out.append(measure(lab, f"serve + {n} attached", args.seconds, proc.pid, pids))
            for i in range(n):
                kill(f"attach-{i}")
            stop(proc)
        if args.tabs and shutil.which("chromium") and "tabs" in args.scenarios:
            sock = tmp / "serve-web.sock"
            proc, url = start_serve(args.config, sock, f"127.0.0.1:{args.web_port}")
            assert url, "serve printed no browser URL"
            # Each tab opened over DevTools, as the browser test does; held open for the window.
            hold = args.seconds + 60
            browser = subprocess.Popen(
                [sys.executable, "-c", TABS, url, str(args.tabs), str(hold)],
                cwd=Path(__file__).resolve().parent.parent, start_new_session=True,
            )  # fmt: skip
            deadline = time.monotonic() + 60
            tabs: list[int] = []
            while time.monotonic() < deadline and len(tabs) < args.tabs:
                time.sleep(0.5)
                tabs = [
                    c.pid
                    for c in psutil.Process(proc.pid).children(recursive=True)
                    if "attach" in " ".join(c.cmdline()) and c.name().startswith("python")
                ]
            assert len(tabs) == args.tabs, f"{len(tabs)} of {args.tabs} tabs attached"
            out.append(measure(lab, f"serve + {args.tabs} browser tabs", args.seconds, proc.pid, tabs, True))
            browser.send_signal(signal.SIGTERM)  # its own handler closes Chromium
            browser.wait(60)
            stop(proc)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--viewers", default="1,5,20")
    parser.add_argument("--tabs", type=int, default=5)
    parser.add_argument("--web-port", type=int, default=25499)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--scenarios", default="consoles,attach,tabs")
    args = parser.parse_args()
    args.viewer_counts = [int(v) for v in args.viewers.split(",")]
    windows = run(args)
    if args.json:
        print(json.dumps([w.__dict__ for w in windows], indent=2))
        return
    print("| scenario | statements/s | server ms/s | Patroni GETs/s | serve CPU % | CPU % per viewer |")
    print("|---|---|---|---|---|---|")
    for w in windows:
        s = "-" if w.serve_cpu_pct is None else f"{w.serve_cpu_pct:.1f}"
        v = "-" if w.viewer_cpu_pct is None else f"{w.viewer_cpu_pct:.1f}"
        print(f"| {w.name} | {w.statements_s:.1f} | {w.server_ms_s:.2f} | {w.gets_s:.1f} | {s} | {v} |")


if __name__ == "__main__":
    main()
