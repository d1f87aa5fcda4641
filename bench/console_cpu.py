"""CPU seconds per minute of the whole console (poller + UI) at a 1 s interval against the lab.

Runs the console in a real terminal (a detached tmux session of the given size) or headless,
reads the process's utime+stime from /proc before and after the window, and prints each run
and the median. Example:

    .venv/bin/python bench/console_cpu.py --config /tmp/lab/pgtop-ha.toml --runs 3 --seconds 60
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` in seconds (children not included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def child(config: Path, interval: float, theme: str, poller_only: bool) -> None:
    """The console as the benchmark runs it (read-only), or its poller alone for comparison."""
    import asyncio

    from pgtop_ha.collect.poller import Poller
    from pgtop_ha.settings import load_settings

    settings = load_settings(config, {"interval": interval, "theme": theme})
    if poller_only:
        poller = Poller.from_settings(settings)
        asyncio.run(poller.run(lambda _: None, lambda: interval))
        return
    from pgtop_ha.ui.app import PgtopApp

    PgtopApp(settings, Poller.from_settings(settings)).run()


def run_tmux(args: argparse.Namespace, index: int) -> float:
    """One measured run in a detached tmux session; returns CPU seconds per minute."""
    session = f"pgtop-bench-{os.getpid()}-{index}"
    cmd = " ".join(
        shlex.quote(part)
        for part in (
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            "--config",
            str(args.config),
            "--interval",
            str(args.interval),
            "--theme",
            args.theme,
            *(["--poller-only"] if args.poller_only else []),
        )
    )
    w, h = args.size.split("x")
    env_cmd = f"cd {shlex.quote(os.getcwd())} && exec {cmd}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", w, "-y", h, env_cmd], check=True)
    try:
        pid = int(
            subprocess.run(
                ["tmux", "display-message", "-p", "-t", session, "#{pane_pid}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        time.sleep(args.warmup)  # start-up (imports, first connections) is not steady state
        start = cpu_seconds(pid)
        t0 = time.monotonic()
        time.sleep(args.seconds)
        used = cpu_seconds(pid) - start
        elapsed = time.monotonic() - t0
        screen = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True
        ).stdout
        if args.show:
            print(screen)
        return used * 60.0 / elapsed
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)


def main() -> int:
    """Parse flags, run the benchmark, print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="the lab's pgtop-ha.toml")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--warmup", type=float, default=8.0)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--size", default="200x50", help="terminal COLSxROWS (80x24, 200x50...)")
    p.add_argument("--theme", default="dark")
    p.add_argument("--show", action="store_true", help="print the screen after each run")
    p.add_argument("--poller-only", action="store_true", help="measure the poller without the UI")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.config, args.interval, args.theme, args.poller_only)
        return 0
    figures = []
    for i in range(args.runs):
        figure = run_tmux(args, i)
        figures.append(figure)
        what = "poller only" if args.poller_only else args.size
        print(f"run {i + 1}: {figure:.3f} CPU s/min ({what}, every {args.interval:g}s)")
    print(f"median: {statistics.median(figures):.3f} CPU s/min over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
