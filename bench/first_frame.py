"""Time from launch to the first full frame of the console in tmux, and its RSS after a long run.

First frame: the read-only console starts in a detached tmux session of the given size; the
screen is read with `capture-pane` every 20 ms until the header says `last HH:MM:SS` (a first
snapshot is shown) and every member's name is on screen. The figure is the wall time from the
`tmux new-session` call, so it includes the interpreter's start and imports, as a user sees it.
Median and maximum of --runs launches. pg_activity (--reference, on the leader) is launched in turn
in the same minutes, until its header and process list are drawn, so the figure is also a ratio
that survives a slower machine. `--baseline-tree DIR` alternates each launch with one of an
older copy of the tree (PYTHONPATH), so both medians come from the same minutes of a noisy machine.
The consoles run without PYTHONDONTWRITEBYTECODE, as on a user's machine (bytecode caches written
once and reused; a sandbox that sets it would time the compiler). Example:

    .venv/bin/python bench/first_frame.py --config /tmp/lab/pgtop-ha.toml --runs 5 --size 80x24

`--soak SECONDS` then leaves one console running that long and prints its process tree's RSS
every --every seconds (issue 10: RSS ≤ 120 MB after 1 h).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root, as fleet_scale.py

from bench.console_cpu import (  # the one home of a tree's RSS, the reference's command, a tmux server
    DEFAULT_PG_ACTIVITY,
    lab_info,
    pg_activity_command,
    tmux_server,
    tree_command,
    tree_rss_mb,
)

# A tmux server of our own, kept alive by a keeper session: a server exits with its last
# session, and a new session started while it shuts down fails.
TMUX = ["tmux", "-L", f"pgtop-first-{os.getpid()}"]
LAST = re.compile(r"last \d\d:\d\d:\d\d")
# pg_activity's full frame: its header's session counts (read from the server) and its process list.
PGA_SESSIONS = re.compile(r"Sessions: \d+/\d+ total")

Ready = Callable[[str], bool]


def console(config: Path, tree: Path | None = None) -> str:
    """The console's command line (read-only, so no write path is built), from ``tree`` when given."""
    return shlex.join(tree_command(tree, "--read-only", "--config", str(config)))


def launch(size: str, command: str) -> float:
    """Start the console; returns the monotonic time tmux was asked to start it."""
    cols, rows = size.split("x")
    started = time.monotonic()
    subprocess.run([*TMUX, "new-session", "-d", "-s", "c", "-x", cols, "-y", rows, command], check=True)
    return started


def screen() -> str:
    """The pane's text now ('' while the session is starting)."""
    out = subprocess.run([*TMUX, "capture-pane", "-p", "-t", "c"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else ""


def console_ready(members: list[str]) -> Ready:
    """The console's full frame: the header shows a snapshot and every member is on screen."""
    return lambda text: bool(LAST.search(text)) and all(m in text for m in members)


def pg_activity_ready(text: str) -> bool:
    """pg_activity's full frame: server figures in its header and its process list's title."""
    return bool(PGA_SESSIONS.search(text)) and "RUNNING QUERIES" in text


def first_frame(size: str, command: str, ready: Ready, deadline_s: float = 30.0) -> float:
    """Seconds from launch until ``ready`` holds for the pane's text."""
    started = launch(size, command)
    try:
        while time.monotonic() - started < deadline_s:
            text = screen()
            if ready(text):
                return time.monotonic() - started
            time.sleep(0.02)
        raise SystemExit(f"no full frame within {deadline_s:.0f} s; screen was:\n{screen()}")
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", "c"], capture_output=True)


def soak(size: str, command: str, seconds: float, every: float) -> None:
    """Run one console for ``seconds``, printing its RSS every ``every`` seconds."""
    launch(size, command)
    try:
        time.sleep(2)
        out = subprocess.run([*TMUX, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True)
        pid = int(out.stdout.split()[0])
        start = time.monotonic()
        while True:
            elapsed = time.monotonic() - start
            print(f"{elapsed / 60:6.1f} min  RSS {tree_rss_mb(pid):6.1f} MB", flush=True)
            if elapsed >= seconds:
                break
            time.sleep(min(every, seconds - elapsed))
    finally:
        subprocess.run([*TMUX, "kill-session", "-t", "c"], capture_output=True)


def main() -> None:
    """Measure the first frame (and optionally soak)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the lab's pgtop-ha.toml")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size", default="80x24", help="terminal COLSxROWS")
    parser.add_argument("--members", default="node1,node2,node3", help="names that must be on screen")
    parser.add_argument("--baseline-tree", type=Path, help="alternate launches with this older tree")
    parser.add_argument(
        "--reference",
        choices=("pg_activity", "none"),
        default="pg_activity",
        help="launched in turn in the same minutes (on the leader), for a ratio",
    )
    parser.add_argument("--pg-activity", default=DEFAULT_PG_ACTIVITY, help="pg_activity executable")
    parser.add_argument("--soak", type=float, default=0.0, help="then run one console this many seconds")
    parser.add_argument("--every", type=float, default=300.0, help="soak: seconds between RSS lines")
    args = parser.parse_args()
    members = [m for m in args.members.split(",") if m]
    ready = console_ready(members)
    commands = {"pgtop-ha": (console(args.config.resolve()), ready)}
    if args.baseline_tree is not None:
        commands["baseline"] = (console(args.config.resolve(), args.baseline_tree.resolve()), ready)
    if args.reference == "pg_activity":
        if not os.access(args.pg_activity, os.X_OK):
            raise SystemExit(
                f"{args.pg_activity}: not found; install pg_activity there or pass --reference none"
            )
        lab = lab_info(args.config.resolve())
        ref = pg_activity_command(args.pg_activity, lab, 1.0)
        env = f"env TERM=xterm-256color PGPASSFILE={shlex.quote(str(lab.pgpass))}"
        commands["pg_activity"] = (f"{env} {shlex.join(ref)}", pg_activity_ready)
    with tmux_server(TMUX):
        measure(args, commands)


def measure(args: argparse.Namespace, commands: dict[str, tuple[str, Ready]]) -> None:
    """The first-frame runs (alternating tools), then the soak when asked."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for run in range(1, args.runs + 1):
        for name, (command, ready) in commands.items():
            took = first_frame(args.size, command, ready)
            times[name].append(took)
            print(f"run {run} {args.size} {name}: first full frame after {took:.3f} s", flush=True)
    for name, got in times.items():
        if got:
            median, worst = statistics.median(got), max(got)
            print(f"{name}: median {median:.3f} s, max {worst:.3f} s over {len(got)} launches")
    ref = times.get("pg_activity")
    if ref and times["pgtop-ha"]:
        ratio = statistics.median(times["pgtop-ha"]) / statistics.median(ref)
        print(f"ratio pgtop-ha / pg_activity (medians): {ratio:.1f}×")
    if args.soak > 0:
        soak(args.size, commands["pgtop-ha"][0], args.soak, args.every)


if __name__ == "__main__":
    main()
