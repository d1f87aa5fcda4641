"""The screen's CPU on a recorded minute: a recording replayed in tmux by this tree and an older one.

Live, two consoles beside each other do not see the same screen: each polls at its own phase,
so under `lab fault load` one catches a problem at its threshold that the other misses, and
their frame costs differ by more than most UI changes gain (issue 10). A recording replayed at
1x shows both trees the very same snapshots at the same pace, with no polling at all, so the
difference is what the UI does with them. Each run starts both replays at once (in turn first),
waits --warmup seconds, then reads the CPU of each process tree over --seconds. Example:

    .venv/bin/pgtop-ha record --config /tmp/lab/pgtop-ha.toml /tmp/load.db   # under load, ~2 min
    .venv/bin/python bench/replay_cpu.py /tmp/load.db --baseline-tree /tmp/base --runs 3

Trees are run as console_cpu.tree_command() runs them: `python -P -m pgtop_ha replay FILE`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from bench.console_cpu import TMUX, start, stop, tmux_server, tree_command, tree_times  # one home

THIS_TREE = Path(__file__).resolve().parent.parent


def main() -> int:
    """Parse the arguments, run the replays, print each run and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recording", type=Path, help="a recording (`pgtop-ha record FILE`)")
    parser.add_argument(
        "--baseline-tree", type=Path, help="an older copy of the tree, replayed beside this one"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=100.0, help="measured window (≤ the recording)")
    parser.add_argument("--warmup", type=float, default=4.0)
    parser.add_argument("--size", default="160x48", help="tmux window size, COLSxROWS")
    args = parser.parse_args()
    trees = {"this tree": THIS_TREE}
    if args.baseline_tree is not None:
        trees["baseline"] = args.baseline_tree.resolve()
    figures: dict[str, list[float]] = {name: [] for name in trees}
    with tmux_server(TMUX):
        for run in range(args.runs):
            order = list(trees) if run % 2 == 0 else list(trees)[::-1]
            sessions = {name: f"replay-{run}-{i}" for i, name in enumerate(order)}
            try:
                replay = ("replay", str(args.recording))
                pids = {
                    name: start(sessions[name], args.size, tree_command(trees[name], *replay), {})
                    for name in order
                }
                time.sleep(args.warmup)  # start-up is not what is measured
                before = {name: tree_times(pid) for name, pid in pids.items()}
                began = time.monotonic()
                time.sleep(args.seconds)
                elapsed = time.monotonic() - began
                for name, pid in pids.items():
                    figures[name].append((tree_times(pid) - before[name]) * 60.0 / elapsed)
            finally:
                for session in sessions.values():
                    stop(session)
            print(
                f"run {run + 1}: " + ", ".join(f"{n} {v[-1]:.3f} CPU s/min" for n, v in figures.items()),
                flush=True,
            )
    for name, values in figures.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name}: median {statistics.median(values):.2f} CPU s/min ({runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
