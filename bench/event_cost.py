"""CPU per new event with a full timeline: the console after an incident, this tree against an older one.

A console open through an hour of failure tests keeps 500 events (ui/app.py EVENTS), and the
Events pane shows them on the dashboard. Each run starts the app headless at --size with scripted
snapshots (tests/ui/harness.py), stamps --events markers, then --new more one at a time, each
drawn before the next; figure: the main thread's CPU per new event, the frames included. The
trees run in turn, in child processes (PYTHONPATH), so each runs its own code. Example:

    .venv/bin/python bench/event_cost.py --baseline-tree /tmp/base --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

THIS_TREE = Path(__file__).resolve().parent.parent
SETTLE_S = 0.3  # after the last new event: its frame is drawn inside the window


async def measure(events: int, new: int, size: tuple[int, int]) -> float:
    """Milliseconds of the main thread's CPU per new event (in the tree on sys.path)."""
    from tests.ui import fixtures as fx
    from tests.ui.harness import make_app, settled, until

    app, source = make_app([fx.healthy()])
    async with app.run_test(size=size) as pilot:
        await settled(pilot, app, source)
        for i in range(events):
            app.mark(f"bench marker {i}: a failure test step, as long as a real event's text")
        await until(pilot, lambda: app.event_count >= events, what="the timeline filled")
        await pilot.pause(SETTLE_S)
        start = time.thread_time()
        for i in range(new):
            app.mark(f"new {i}")
            await pilot.pause()
        await pilot.pause(SETTLE_S)
        return (time.thread_time() - start) / new * 1000.0


def child(args: argparse.Namespace) -> None:
    """One run in this process: print the figure."""
    cols, rows = (int(x) for x in args.size.split("x"))
    print(f"{asyncio.run(measure(args.events, args.new, (cols, rows))):.2f}")


def run(tree: Path, args: argparse.Namespace) -> float:
    """One run of ``tree`` in a child process; its figure."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-P", str(tree / "bench" / "event_cost.py")]
    if not (tree / "bench" / "event_cost.py").exists():
        command = [sys.executable, "-P", str(Path(__file__).resolve())]  # an older tree: this script
    out = subprocess.run(
        [*command, "--child", "--events", str(args.events), "--new", str(args.new), "--size", args.size],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    """Parse the arguments, alternate the trees, print each run and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", type=Path, help="an older copy of the tree, run in turn")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--events", type=int, default=500, help="events kept before the timing")
    parser.add_argument("--new", type=int, default=50, help="new events timed, one at a time")
    parser.add_argument("--size", default="160x48", help="COLSxROWS")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    trees = {"this tree": THIS_TREE}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    figures: dict[str, list[float]] = {name: [] for name in trees}
    for index in range(args.runs):
        for name, tree in trees.items():
            figures[name].append(run(tree, args))
        print(f"run {index + 1}: " + ", ".join(f"{n} {f[-1]:.1f} ms" for n, f in figures.items()), flush=True)
    for name, values in figures.items():
        shown = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name}: median {statistics.median(values):.1f} ms CPU per new event ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
