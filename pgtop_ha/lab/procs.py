"""Starting, tracking and ending the lab's processes, always by PID."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from pgtop_ha.errors import UserError


@dataclass(frozen=True)
class RunAs:
    """The OS identity lab processes run under (None: the current user)."""

    uid: int | None = None
    gid: int | None = None
    home: str | None = None


def log_tail(path: os.PathLike[str], lines: int, limit: int = 65536) -> list[str]:
    """The last ``lines`` lines of a log, from its last ``limit`` bytes; [] when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return text.strip().splitlines()[-lines:]


def start_time(pid: int) -> float | None:
    """When ``pid`` started, in seconds since the epoch (guards against a reused PID), or None if gone."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def alive(pid: int, started: float | None = None) -> bool:
    """Whether ``pid`` runs (and, given ``started``, is the same process) and is not a zombie."""
    try:
        proc = psutil.Process(pid)
        if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
            return False
        return started is None or float(proc.create_time()) == started
    except psutil.Error:
        return False


# What a lab child must not inherit from the caller's shell: libpq reads PG* (PGPASSWORD, PGUSER,
# PGSSLMODE, PGSERVICE, PGOPTIONS...), pgBackRest PGBACKREST_*, our console PGTOP_HA_*, psql PSQL*;
# Patroni takes PATRONI_* and etcd ETCD_* as configuration that overrides the lab's own.
FOREIGN_PREFIXES = ("PG", "PSQL", "PATRONI_", "ETCD")


def lab_env(own: Mapping[str, str] | None = None, caller: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment (default os.environ) minus FOREIGN_PREFIXES, plus the lab's ``own``."""
    base = os.environ if caller is None else caller
    env = {k: v for k, v in base.items() if not k.startswith(FOREIGN_PREFIXES)}
    env.update(own or {})
    return env


def _as_lab_user(run_as: RunAs, env: Mapping[str, str] | None, cwd: Path | None) -> dict[str, Any]:
    """Popen arguments shared by every lab child: identity, environment, working directory.

    ``env`` holds only what the lab sets; the rest comes from the caller through lab_env.
    """
    full_env = lab_env(env)
    if run_as.home:
        full_env["HOME"] = run_as.home
    kwargs: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "env": full_env,
        # The caller's directory may be private (a checkout under /root): never inherit it.
        "cwd": str(cwd) if cwd else "/",
    }
    if run_as.uid is not None:
        kwargs.update(user=run_as.uid, group=run_as.gid, extra_groups=[])
    return kwargs


def spawn(
    argv: Sequence[str],
    *,
    log: Path,
    run_as: RunAs,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` detached in its own session, output appended to ``log``; ``env``: the lab's own."""
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **_as_lab_user(run_as, env, cwd),
        )


def run(
    argv: Sequence[str],
    *,
    run_as: RunAs,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to completion as the lab user and return its output; ``env``: the lab's own."""
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
        **_as_lab_user(run_as, env, cwd),
    )


def wait_gone(pids: Iterable[int], deadline: float) -> list[int]:
    """Poll until every PID has exited or the monotonic ``deadline`` passes; return survivors."""
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if alive(p)]
    return left


def terminate(pids: Iterable[int], grace: float = 20.0) -> None:
    """SIGTERM the PIDs, wait up to ``grace`` seconds, then SIGKILL survivors."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a frozen process cannot act on SIGTERM
            os.kill(pid, signal.SIGTERM)
    for pid in wait_gone(pids, time.monotonic() + grace):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_gone(pids, time.monotonic() + 5)


def _stop_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


class ChildStopped(Exception):
    """run_child ended its child early because ``stop_when`` gave a reason (the message)."""


def run_child(
    argv: Sequence[str],
    *,
    timeout: float,
    stop_when: Callable[[], str | None] | None = None,
    **popen: Any,
) -> int:
    """Run ``argv`` to its end and return its exit code; if we are stopped first, so is it.

    ``subprocess.run`` leaves its child running when this process gets SIGTERM (Python's default
    action ends us at once): a load generator would go on for minutes. Here SIGTERM and SIGHUP
    unwind this process, and the child is ended by PID on the way out. ``stop_when`` is asked
    every second while the child runs: a reason ends the child and raises ChildStopped.
    """
    # Only the main thread may set handlers (and only it receives signals); from another thread
    # (tests run a load beside their checks) the child is still ended if the wait is cut short.
    main = threading.current_thread() is threading.main_thread()
    stops = (signal.SIGTERM, signal.SIGHUP) if main else ()
    previous = {sig: signal.signal(sig, _stop_on_signal) for sig in stops}
    child = subprocess.Popen(list(argv), **popen)
    deadline = time.monotonic() + timeout
    try:
        if stop_when is None:
            return child.wait(timeout=timeout)
        while True:
            try:
                return child.wait(timeout=max(0.0, min(deadline - time.monotonic(), 1.0)))
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise
            if (why := stop_when()) is not None:
                raise ChildStopped(why)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            terminate([child.pid], grace=5.0)
            child.wait()


def _ancestors() -> set[int]:
    me = psutil.Process()
    try:
        return {me.pid, *(int(p.pid) for p in me.parents())}
    except psutil.Error:  # an ancestor gone meanwhile: ourselves at least
        return {me.pid}


def pids_under(directory: Path, uid: int | None = None) -> list[int]:
    """PIDs of ``uid`` working inside ``directory``: the processes the lab started there.

    Daemons are started with their working directory in the lab's state directory, and so are
    the processes they fork (postgres backends, pgBackRest's async workers); this finds them by
    that, never by name. Our own process and its ancestors are never included.
    """
    root = str(directory.resolve())
    uid = os.getuid() if uid is None else uid
    mine = _ancestors()
    found = []
    # A process we may not inspect, or one that ends meanwhile, answers None for its fields.
    for proc in psutil.process_iter(["uids", "cwd", "status"]):
        cwd, uids, status = proc.info["cwd"], proc.info["uids"], proc.info["status"]
        if proc.pid in mine or cwd is None or uids is None or uids.effective != uid:
            continue
        if (cwd == root or cwd.startswith(root + "/")) and status not in (psutil.STATUS_ZOMBIE, None):
            found.append(int(proc.pid))
    return sorted(found)


def postmaster_pid(data_dir: Path) -> int | None:
    """The postmaster PID from ``postmaster.pid`` if that process runs."""
    try:
        first = (data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
        pid = int(first)
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None


class PidBook:
    """The lab's record of what it started: name -> (pid, start time), kept in a JSON file."""

    def __init__(self, path: Path):
        self.path = path

    def load(self) -> dict[str, tuple[int, float | None]]:
        """Every recorded process."""
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        # A start time is a float (seconds since the epoch); a book written before that held kernel
        # ticks (an int): such an entry is checked by PID alone rather than taken for a dead process.
        return {k: (int(v[0]), v[1] if isinstance(v[1], float) else None) for k, v in raw.items()}

    def record(self, name: str, pid: int) -> None:
        """Remember that ``name`` runs as ``pid``."""
        book = self.load()
        book[name] = (pid, start_time(pid))
        self._save(book)

    def forget(self, name: str) -> None:
        """Drop ``name`` from the record."""
        book = self.load()
        book.pop(name, None)
        self._save(book)

    def running(self, name: str) -> int | None:
        """The PID of ``name`` if the very process recorded still runs."""
        entry = self.load().get(name)
        if entry is None:
            return None
        pid, started = entry
        return pid if alive(pid, started) else None

    def _save(self, book: dict[str, tuple[int, float | None]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({k: list(v) for k, v in book.items()}, indent=1))
        tmp.replace(self.path)


def poll(condition: Callable[[], bool], timeout: float, interval: float = 0.25) -> bool:
    """Poll ``condition`` until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def start_served(
    book: PidBook, name: str, command: list[str], *, cwd: Path, health: str, timeout: float = 120.0
) -> None:
    """Start ``name`` unless ``book`` has it running (log in ``cwd``); wait until ``health`` answers 200."""
    log = cwd / f"{name}.log"
    if not book.running(name):
        book.record(name, spawn(command, log=log, run_as=RunAs(), cwd=cwd).pid)

    def ready() -> bool:
        if not book.running(name):
            raise UserError(f"{name} exited; see {log}")
        try:
            return httpx.get(health, timeout=1, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    if not poll(ready, timeout, interval=0.2):
        raise UserError(f"{name} not ready after {timeout:g} s; see {log}")
