"""CPU seconds per minute of the whole console (poller + UI) as a user runs it, against a reference.

Each run starts, for every terminal size, the read-only console in a detached tmux session of that
size, and the reference tool (pg_activity on the leader, or `patronictl list` in a loop) in another
tmux session of the same size at the same time, so both see the same machine and cluster. After a
warm-up it reads the CPU time (user + system) of each whole process tree (psutil, children
included, exited children too) over the window. It prints each run, then the median of the runs
per size and the ratio console / reference. Example:

    .venv/bin/python bench/console_cpu.py --config /tmp/lab/pgtop-ha.toml --runs 3 --seconds 60 \
        --sizes 80x24,160x48,200x50 --load

`--baseline-tree DIR` runs a second console from a copy of an older tree in the same windows
(before/after under the same load). `--load` runs `pgtop-ha lab fault load` (pgbench through the
writer port) for the whole benchmark. `--floor` also runs, in the same windows, the floor of the
prescribed stack (bench/floor.py): its reads alone, its screen alone, both in one process (a line
drawn each second, or once a minute as a calm console's header), the stock table; `--floor
poll,calm` runs only those.
pg_activity is looked for at --pg-activity (install it into its own venv, e.g.
`python3 -m venv /tmp/pga-venv && /tmp/pga-venv/bin/pip install 'pg_activity[psycopg]==3.6.2'`;
it is not a dependency of pgtop-ha).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

DEFAULT_PG_ACTIVITY = "/tmp/pga-venv/bin/pg_activity"
# A tmux server of our own, kept alive by a keeper session: a server exits with its last
# session, and a new session started while it shuts down fails.
TMUX = ["tmux", "-L", f"pgtop-bench-{os.getpid()}"]


@contextlib.contextmanager
def tmux_server(tmux: list[str]) -> Iterator[None]:
    """The ``tmux`` server (its -L socket) for the block, kept alive by a keeper session, then ended."""
    subprocess.run([*tmux, "new-session", "-d", "-s", "keeper", "sleep 86400"], check=True)
    try:
        yield
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, capture_output=True)


@dataclass(frozen=True)
class Figure:
    """One tool's cost over one window."""

    cpu_s_per_min: float
    rss_mb: float


def tree_times(pid: int) -> float:
    """CPU seconds of ``pid`` and all its descendants (reaped children included)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue  # exited between listing and reading: its parent's children_* has it
        total += t.user + t.system + t.children_user + t.children_system
    return total


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MB."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 1e6


def child(config: Path, interval: float, theme: str, poller_only: bool) -> None:
    """The console as the benchmark runs it (read-only), or its poller alone for comparison."""
    import asyncio
    from types import ModuleType

    from pgtop_ha.collect.poller import Poller
    from pgtop_ha.settings import load_settings

    runtime: ModuleType | None
    try:
        # The console's own loop (uvloop where installed) and its settled start-up heap.
        from pgtop_ha import runtime
    except ImportError:  # a baseline tree from before pgtop_ha/runtime.py: as it ran then
        runtime = None
    settings = load_settings(config, {"interval": interval, "theme": theme})
    poller = Poller.from_settings(settings)
    if poller_only:
        polling = poller.run(lambda _: None, lambda: interval)
        runtime.run(polling) if runtime is not None else asyncio.run(polling)
        return
    from pgtop_ha.ui.app import PgtopApp

    if runtime is None:
        PgtopApp(settings.console(), poller).run()
    else:
        runtime.run_app(PgtopApp(settings.console(), poller, settle=runtime.settle_heap))


def console_command(args: argparse.Namespace, tree: Path | None = None) -> list[str]:
    """The console's command line (this script in child mode), from ``tree`` when given."""
    script = os.path.abspath(__file__) if tree is None else str(tree / "bench" / "console_cpu.py")
    # `env` execs the interpreter, so the pane's pid is still the console's own.
    prefix = [] if tree is None else ["env", f"PYTHONPATH={tree}"]
    return [
        *prefix,
        sys.executable,
        script,
        "--child",
        "--config",
        str(args.config),
        "--interval",
        str(args.interval),
        "--theme",
        args.theme,
        *(["--poller-only"] if args.poller_only else []),
    ]


def tree_command(tree: Path | None, *args: str) -> list[str]:
    """``pgtop-ha ARGS`` as a user runs it, from ``tree`` (PYTHONPATH) when given, else this one."""
    # `python -m pgtop_ha` runs what the `pgtop-ha` script runs, and an older tree's own entry
    # point; -P keeps the tree in the cwd from shadowing PYTHONPATH. Bytecode is written and
    # reused, as on a user's machine (a sandbox that forbids it would time the compiler).
    env = ["env", "-u", "PYTHONDONTWRITEBYTECODE", *([f"PYTHONPATH={tree}"] if tree is not None else [])]
    return [*env, sys.executable, "-P", "-m", "pgtop_ha", *args]


FLOORS = ("poll", "screen", "both", "calm", "shown")


def floors(args: argparse.Namespace) -> list[str]:
    """The floors asked for by ``--floor`` (all when it names none)."""
    asked = [what for what in str(args.floor or "").split(",") if what]
    unknown = sorted(set(asked) - set(FLOORS))
    if unknown:
        raise SystemExit(f"--floor: unknown floor {', '.join(unknown)}; choose from {', '.join(FLOORS)}")
    return asked


def floor_command(args: argparse.Namespace, what: str) -> list[str]:
    """bench/floor.py's command line: one of the prescribed stack's floors (``FLOORS``)."""
    script = str(Path(__file__).resolve().with_name("floor.py"))
    return [
        sys.executable,
        script,
        "--config",
        str(args.config),
        "--what",
        what,
        "--interval",
        str(args.interval),
    ]


def pg_activity_command(exe: str, lab: LabInfo, interval: float) -> list[str]:
    """pg_activity on the lab's leader as the superuser, refreshing every ``interval`` seconds."""
    return [
        exe,
        "-h",
        "127.0.0.1",
        "-p",
        str(lab.leader_port),
        "-U",
        lab.superuser,
        "-d",
        lab.dbname,
        "--refresh",
        f"{interval:g}",
    ]


def reference_command(args: argparse.Namespace, lab: LabInfo) -> list[str] | None:
    """The reference tool's command line, or None when there is none."""
    if args.reference == "pg_activity":
        return pg_activity_command(args.pg_activity, lab, args.interval)
    if args.reference == "patronictl":
        # What an operator without a console runs: the cluster list once per interval.
        patronictl = str(Path(sys.executable).with_name("patronictl"))
        listing = f"{shlex.quote(patronictl)} -c {shlex.quote(str(lab.patroni_config))} list"
        loop = f"while :; do {listing}; sleep {args.interval:g}; done"
        return ["sh", "-c", loop]
    return None


@dataclass(frozen=True)
class LabInfo:
    """What the reference tool needs to reach the lab."""

    leader_port: int
    superuser: str
    dbname: str
    pgpass: Path
    patroni_config: Path


def lab_info(config: Path) -> LabInfo:
    """The lab's leader port and credentials file, from the console config's [lab] section."""
    import io

    from pgtop_ha.lab.cli import layout_from
    from pgtop_ha.lab.cluster import Lab
    from pgtop_ha.lab.layout import DBNAME, SUPERUSER

    layout = layout_from(argparse.Namespace(config=config))  # as `pgtop-ha lab --config` finds it
    lab = Lab(layout, out=io.StringIO())
    index = lab.leader_index()
    return LabInfo(
        leader_port=layout.pg_port(index),
        superuser=SUPERUSER,
        dbname=DBNAME,
        pgpass=layout.pgpass,
        patroni_config=layout.state_dir / f"patroni-{layout.names[0]}.yml",
    )


def start(session: str, size: str, command: list[str], env: dict[str, str]) -> int:
    """Start ``command`` in a detached tmux session of ``size``; returns the pane's pid."""
    w, h = size.split("x")
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    line = f"cd {shlex.quote(os.getcwd())} && exec env {exports} {shlex.join(command)}"
    subprocess.run([*TMUX, "new-session", "-d", "-s", session, "-x", w, "-y", h, line], check=True)
    out = subprocess.run(
        [*TMUX, "display-message", "-p", "-t", session, "#{pane_pid}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(out.stdout.strip())


def stop(session: str) -> None:
    """Kill the tmux session (and so the tool in it)."""
    subprocess.run([*TMUX, "kill-session", "-t", session], check=False, capture_output=True)


def measure(args: argparse.Namespace, lab: LabInfo | None, size: str, index: int) -> dict[str, Figure]:
    """One window at one size: every tool at once; CPU s/min and RSS per tool."""
    tools: dict[str, list[str]] = {"pgtop-ha": console_command(args)}
    if args.baseline_tree is not None:
        tools["baseline"] = console_command(args, args.baseline_tree)
    if args.floor:
        for what in floors(args):
            tools[f"floor {what}"] = floor_command(args, what)
    if lab is not None:
        ref = reference_command(args, lab)
        if ref is not None:
            tools[args.reference] = ref
    env = {"TERM": "xterm-256color"}
    if lab is not None:
        env["PGPASSFILE"] = str(lab.pgpass)
    sessions = {name: f"bench-{os.getpid()}-{index}-{size}-{name}" for name in tools}
    pids: dict[str, int] = {}
    try:
        for name, command in tools.items():
            pids[name] = start(sessions[name], size, command, env)
        time.sleep(args.warmup)  # start-up (imports, first connections) is not steady state
        before = {name: tree_times(pid) for name, pid in pids.items()}
        t0 = time.monotonic()
        time.sleep(args.seconds)
        used = {name: tree_times(pid) - before[name] for name, pid in pids.items()}
        elapsed = time.monotonic() - t0
        figures = {name: Figure(used[name] * 60.0 / elapsed, tree_rss_mb(pid)) for name, pid in pids.items()}
        for name in pids:
            screen = subprocess.run(
                [*TMUX, "capture-pane", "-p", "-t", sessions[name]], capture_output=True, text=True
            ).stdout
            if args.show:
                print(f"--- {name} {size} ---\n{screen}")
            if not screen.strip() and name != "floor poll":  # the reads alone draw nothing
                print(f"warning: {name} showed an empty screen at {size}", file=sys.stderr)
        return figures
    finally:
        for session in sessions.values():
            stop(session)


def start_load(args: argparse.Namespace, seconds: int) -> subprocess.Popen[bytes]:
    """`pgtop-ha lab fault load` for ``seconds`` in its own process group (output to a log)."""
    pgtop = str(Path(sys.executable).with_name("pgtop-ha"))
    log = open(args.load_log, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [pgtop, "lab", "--config", str(args.config), "fault", "load", "--seconds", str(seconds)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def main() -> int:
    """Parse flags, run the benchmark, print the figures."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="the lab's pgtop-ha.toml")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seconds", type=float, default=60.0, help="measured window per run")
    p.add_argument("--warmup", type=float, default=8.0)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--sizes", "--size", default="80x24,160x48,200x50", help="COLSxROWS[,COLSxROWS...]")
    p.add_argument("--theme", default="dark")
    p.add_argument(
        "--reference",
        choices=("pg_activity", "patronictl", "none"),
        default="pg_activity",
        help="tool measured in the same windows (pg_activity runs on the leader)",
    )
    p.add_argument("--pg-activity", default=DEFAULT_PG_ACTIVITY, help="pg_activity executable")
    p.add_argument("--load", action="store_true", help="run `lab fault load` during the benchmark")
    p.add_argument("--load-log", default="/tmp/pgtop-bench-load.log")
    p.add_argument("--show", action="store_true", help="print the screens after each run")
    p.add_argument("--poller-only", action="store_true", help="measure the poller without the UI")
    p.add_argument(
        "--baseline-tree",
        type=Path,
        help="a copy of an older source tree: its console runs in the same windows (before/after)",
    )
    p.add_argument(
        "--floor",
        nargs="?",
        const=",".join(FLOORS),
        help=f"also run the stack's floor (bench/floor.py): all, or some of {','.join(FLOORS)}",
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.config, args.interval, args.theme, args.poller_only)
        return 0
    if args.reference == "pg_activity" and not os.access(args.pg_activity, os.X_OK):
        print(f"{args.pg_activity}: not found; install pg_activity there or pass --reference patronictl")
        return 2
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    lab = lab_info(args.config) if args.reference != "none" else None
    load = None
    if args.load:
        total = int(len(sizes) * args.runs * (args.warmup + args.seconds + 3) + 30)
        load = start_load(args, min(3600, total))
    results: dict[str, list[dict[str, Figure]]] = {s: [] for s in sizes}
    try:
        with tmux_server(TMUX):
            for run in range(args.runs):
                for size in sizes:
                    figures = measure(args, lab, size, run)
                    results[size].append(figures)
                    line = ", ".join(
                        f"{name} {f.cpu_s_per_min:.3f} CPU s/min ({f.rss_mb:.0f} MB)"
                        for name, f in figures.items()
                    )
                    load1 = os.getloadavg()[0]  # the shared machine's load: context for the figures
                    print(f"run {run + 1} {size}: {line}; load average {load1:.2f}", flush=True)
    finally:
        if load is not None and load.poll() is None:
            os.killpg(load.pid, signal.SIGTERM)
            load.wait(timeout=30)
    what = "poller only" if args.poller_only else "console"
    cond = "under lab fault load" if args.load else "quiet cluster"
    print(f"\nmedian of {args.runs} runs, {args.seconds:g} s each, {what}, {cond}, every {args.interval:g}s:")
    print("| size | console | CPU s/min (runs) | RSS MB | reference CPU s/min (runs) | ratio |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        for console in [name for name in ("baseline", "pgtop-ha") if name in results[size][0]]:
            ours = [r[console].cpu_s_per_min for r in results[size]]
            rss = max(r[console].rss_mb for r in results[size])
            cell = f"**{statistics.median(ours):.2f}** ({', '.join(f'{x:.2f}' for x in ours)})"
            ref_cell = ratio = "–"
            if args.reference in results[size][0]:
                refs = [r[args.reference].cpu_s_per_min for r in results[size]]
                runs = ", ".join(f"{x:.2f}" for x in refs)
                ref_cell = f"{args.reference} **{statistics.median(refs):.2f}** ({runs})"
                if statistics.median(refs) > 0:
                    ratio = f"{statistics.median(ours) / statistics.median(refs):.1f}×"
            print(f"| {size} | {console} | {cell} | {rss:.0f} | {ref_cell} | {ratio} |")
    if args.floor:
        print("\n| size | floor | CPU s/min (runs) | RSS MB |\n|---|---|---|---|")
        for size in sizes:
            for what in floors(args):
                cpu = [r[f"floor {what}"].cpu_s_per_min for r in results[size]]
                rss = max(r[f"floor {what}"].rss_mb for r in results[size])
                cell = f"**{statistics.median(cpu):.2f}** ({', '.join(f'{x:.2f}' for x in cpu)})"
                print(f"| {size} | {what} | {cell} | {rss:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
