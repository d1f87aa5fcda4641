"""Where the console's CPU goes, by asyncio task: each event-loop callback's thread CPU, by what it ran.

The console runs as a user runs it (read-only, in a detached tmux session of the given size); in
it, every callback of the event loop is timed with the thread's CPU clock and filed under what
it ran: a task by its coroutine (a polled source by its task name, the poll loop by where it
resumed), any other callback by its name. cProfile cannot say this for asyncio code (it counts
each resume of a coroutine as a call and puts a C extension's work, such as asyncpg's, under
its Python caller); this can, at no cost but a clock read per callback. Printed after the
window: CPU s/min per label, the share of the main thread, and what ran outside callbacks
(select, Textual's output and input threads). Example:

    .venv/bin/python bench/cpu_by_task.py --config /tmp/lab/pgtop-ha.toml --size 80x24 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from bench.console_cpu import TMUX, start, tmux_server  # the one home of the tmux sessions

Label = str


def label(callback: Callable[..., Any]) -> Label:
    """What a loop callback runs: a task's coroutine (sources and the poll loop in detail), else its name."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        name = getattr(coro, "__qualname__", type(coro).__name__)
        if name.endswith(("Source._poll", "Worker._run")):
            # Several sources share Source._poll and the poll loop runs in a Textual worker:
            # the task's name, or where it resumes, says which work this step is.
            chain = []
            inner: Any = coro
            while inner is not None and hasattr(inner, "cr_await"):
                chain.append(getattr(inner, "__qualname__", "?"))
                inner = inner.cr_await
            where = owner.get_name() if owner.get_name().startswith("source:") else "/".join(chain[-2:])
            return f"{name} [{where[:48]}]"
        frame = getattr(coro, "cr_frame", None)
        if name.endswith("Timer._run_timer") and frame is not None:
            # Textual's timers: the screen's refresh, widgets' intervals; which one, by its callback.
            timer = frame.f_locals.get("self")
            ticks = getattr(timer, "_callback", None)
            return f"{name} [{getattr(ticks, '__qualname__', getattr(timer, 'name', '?'))}]"
        return name
    if isinstance(owner, asyncio.Future):
        return "future callbacks"
    return str(getattr(callback, "__qualname__", type(callback).__name__))


def thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread of this process, by thread name (ThreadPoolExecutor's, Textual's)."""
    import threading

    spent: dict[str, float] = {}
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        try:
            used = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, ProcessLookupError):
            continue  # ended meanwhile
        spent[thread.name] = spent.get(thread.name, 0.0) + used
    return spent


def children_cpu() -> float:
    """CPU seconds of this process's ended and waited-for children (`pgbackrest info`)."""
    times = os.times()
    return times.children_user + times.children_system


def child(out: Path, warmup: float, seconds: float, console_args: list[str]) -> None:
    """Run the console with every loop callback timed; write the figures to ``out`` and exit."""
    from pgtop_ha import cli, runtime
    from pgtop_ha.ui.app import PgtopApp

    spent: dict[Label, float] = {}
    timing = [False]
    run = asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        if not timing[0]:
            return run(handle)
        began = time.thread_time()
        try:
            return run(handle)
        finally:
            key = label(handle._callback)  # type: ignore[attr-defined]
            spent[key] = spent.get(key, 0.0) + time.thread_time() - began

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    # uvloop's handles are C and cannot be timed: the console runs on asyncio's loop here, so
    # these figures are a little above the console's own (pgtop_ha/runtime.py).
    runtime.loop_factory = lambda: asyncio.new_event_loop
    mount = PgtopApp.on_mount

    def on_mount(app: PgtopApp) -> None:
        mount(app)
        marks: dict[str, float] = {}
        threads_before: dict[str, float] = {}

        def begin() -> None:
            spent.clear()
            timing[0] = True
            marks.update(wall=time.monotonic(), cpu=time.process_time(), main=time.thread_time())
            marks.update(children=children_cpu())
            threads_before.update(thread_cpu())
            app.set_timer(seconds, end)

        def end() -> None:
            timing[0] = False
            wall = time.monotonic() - marks["wall"]
            figures = {
                "wall_s": wall,
                "process_cpu_s": time.process_time() - marks["cpu"],
                "main_thread_cpu_s": time.thread_time() - marks["main"],
                "callbacks": spent,
                "children_cpu_s": children_cpu() - marks["children"],
                "threads": {
                    name: used - threads_before.get(name, 0.0)
                    for name, used in thread_cpu().items()
                    if name != "MainThread"
                },
            }
            partial = out.with_suffix(".partial")
            partial.write_text(json.dumps(figures))
            partial.rename(out)  # the parent never reads half a file
            app.exit()

        app.set_timer(warmup, begin)

    PgtopApp.on_mount = on_mount  # type: ignore[method-assign,assignment]
    cli.main(["--read-only", *console_args])


def report(figures: dict[str, Any], top: int) -> str:
    """The figures as CPU s/min: process, main thread, then each label down to the ``top``th."""
    per_min = 60.0 / figures["wall_s"]
    spent: dict[str, float] = figures["callbacks"]
    in_callbacks = sum(spent.values())
    main = figures["main_thread_cpu_s"]
    lines = [
        f"process {figures['process_cpu_s'] * per_min:.3f} CPU s/min over {figures['wall_s']:.0f} s; "
        f"main thread {main * per_min:.3f}, of which loop callbacks {in_callbacks * per_min:.3f}",
        f"{'CPU s/min':>9}  {'share':>5}  what ran",
    ]
    ranked = sorted(spent.items(), key=lambda kv: -kv[1])
    for key, value in ranked[:top]:
        lines.append(f"{value * per_min:9.4f}  {value / main:5.1%}  {key}")
    rest = sum(v for _, v in ranked[top:])
    lines.append(f"{rest * per_min:9.4f}  {rest / main:5.1%}  ({len(ranked) - top} other labels)")
    lines.append("outside the main thread, CPU s/min:")
    for name, used in sorted(figures.get("threads", {}).items(), key=lambda kv: -kv[1]):
        lines.append(f"{used * per_min:9.4f}  thread {name}")
    lines.append(f"{figures.get('children_cpu_s', 0.0) * per_min:9.4f}  ended child processes")
    return "\n".join(lines)


def main() -> int:
    """Parse the arguments; run the console in tmux (or, with --child, be it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="the console's TOML config")
    parser.add_argument("--size", default="80x24", help="tmux window size, WxH")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured window")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds before the window")
    parser.add_argument("--top", type=int, default=25, help="labels printed")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.warmup, args.seconds, ["--config", str(args.config)])
        return 0
    with tempfile.TemporaryDirectory(prefix="pgtop-cpu-by-task-") as tmp:
        out = Path(tmp) / "figures.json"
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            str(out),
            "--config",
            str(args.config),
            "--seconds",
            str(args.seconds),
            "--warmup",
            str(args.warmup),
        ]
        env = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        with tmux_server(TMUX):
            start("console", args.size, command, env)
            deadline = time.monotonic() + args.warmup + args.seconds + 60
            print(f"console in tmux at {args.size}: {args.warmup:.0f} s warm-up, {args.seconds:.0f} s timed")
            while not out.exists():
                if time.monotonic() > deadline:
                    print("cpu_by_task: the console wrote no figures in time", file=sys.stderr)
                    return 1
                time.sleep(0.5)  # polling for the file the child writes, with a deadline
            print(report(json.loads(out.read_text()), args.top))  # the server's end ends the console
    return 0


if __name__ == "__main__":
    sys.exit(main())
