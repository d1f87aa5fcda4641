"""What starting `pgbackrest info` costs the console itself: vfork (subprocess.Popen) against uvloop's fork.

A child started by fork() gets a copy of the parent's page tables, and every page the parent
writes afterwards takes a copy-on-write fault, though the child execs at once; vfork() shares
them until the exec. The console runs `pgbackrest info` every 15 s while its pane is shown. This
runs the console's own `run_info` and uvloop's `create_subprocess_exec` of the same command, in
turns, in a process holding about as much heap as the console (``--heap-mb``), touching a part of
it between runs as the console does; the figure is this process's CPU (user + system) and minor
faults per run, the median over ``--runs`` rounds. The child's own CPU is not counted.

    .venv/bin/python bench/spawn_cost.py [--runs 5] [--each 20] [--heap-mb 70] [-- COMMAND ...]

Both run the command as `run_info` does (``… --output=json info``); without one given, that is
``pgbackrest --config=/dev/null``: any pgBackRest, no repository needed (it lists no stanza).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence

import uvloop

from pgtop_ha.collect import pgbackrest
from pgtop_ha.collect.errors import ParseError


async def _uvloop_fork(argv: Sequence[str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        *pgbackrest.info_argv(argv, None, None),  # what run_info runs
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    await proc.communicate()


async def _console(argv: Sequence[str]) -> None:
    with contextlib.suppress(ParseError):  # a command given that exits non-zero: still measured
        await pgbackrest.run_info(argv, None, None)


async def _round(
    run: Callable[[], Awaitable[None]], each: int, heap: list[dict[str, int]]
) -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = time.process_time()
    for _ in range(each):
        await run()
        for item in heap[::50]:  # the console writes to its objects between two runs
            item["n"] += 1
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - usage.ru_minflt
    return (time.process_time() - cpu) / each * 1000, faults / each


async def _measure(argv: Sequence[str], runs: int, each: int, heap_mb: int) -> dict[str, object]:
    heap = [{"n": i, "text": i} for i in range(heap_mb * 2600)]  # ~1 MB of RSS per 2,600 entries
    ways: dict[str, Callable[[], Awaitable[None]]] = {
        "console (subprocess.Popen, vfork)": lambda: _console(argv),
        "uvloop create_subprocess_exec (fork)": lambda: _uvloop_fork(argv),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(runs):
        for name, run in ways.items():  # interleaved: a noisy moment hits both
            figures[name].append(await _round(run, each, heap))
    return {
        "command": list(argv),
        **{
            name: {
                "cpu_ms_per_run": round(statistics.median(c for c, _ in rows), 2),
                "minor_faults_per_run": round(statistics.median(f for _, f in rows)),
                "cpu_runs": [round(c, 2) for c, _ in rows],
            }
            for name, rows in figures.items()
        },
    }


def main() -> None:
    """Print the medians as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--each", type=int, default=20)
    parser.add_argument("--heap-mb", type=int, default=70)
    parser.add_argument("command", nargs="*", default=["pgbackrest", "--config=/dev/null"])
    args = parser.parse_args()
    result = uvloop.run(_measure(args.command, args.runs, args.each, args.heap_mb))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
