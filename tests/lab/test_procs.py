"""The lab's process bookkeeping (psutil): start times against reused PIDs, zombies, finding by directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pgtop_ha.lab import procs


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    work = tmp_path / "work"
    work.mkdir()
    child = subprocess.Popen(["sleep", "60"], cwd=work)
    yield child
    child.kill()
    child.wait(10)


def test_a_running_process_is_alive_only_with_its_own_start_time(sleeper: subprocess.Popen[bytes]) -> None:
    started = procs.start_time(sleeper.pid)
    assert started is not None and started == procs.start_time(sleeper.pid)
    assert procs.alive(sleeper.pid) and procs.alive(sleeper.pid, started)
    assert not procs.alive(sleeper.pid, started + 1.0)  # the PID reused by another process


def test_an_exited_process_is_not_alive_even_before_it_is_reaped() -> None:
    child = subprocess.Popen(["true"])
    try:
        assert procs.poll(lambda: not procs.alive(child.pid), 10, interval=0.05)
        assert child.poll() == 0  # it was a zombie until now
    finally:
        child.wait(10)


def test_pids_under_finds_what_works_inside_the_directory(
    sleeper: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    assert procs.pids_under(tmp_path) == [sleeper.pid]
    assert procs.pids_under(tmp_path, uid=os.getuid() + 1) == []
    assert procs.pids_under(tmp_path / "elsewhere") == []


def test_our_own_process_and_its_ancestors_are_never_found() -> None:
    assert os.getpid() not in procs.pids_under(Path.cwd())
    assert os.getppid() in procs._ancestors() and os.getpid() in procs._ancestors()


def test_the_pid_book_checks_the_very_process_it_recorded(
    sleeper: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    book = procs.PidBook(tmp_path / "pids.json")
    book.record("sleeper", sleeper.pid)
    assert book.running("sleeper") == sleeper.pid
    pid, started = book.load()["sleeper"]
    (tmp_path / "pids.json").write_text(json.dumps({"sleeper": [pid, (started or 0) + 5.0]}))
    assert book.running("sleeper") is None
    # A book from before psutil held kernel ticks (an int): checked by PID alone.
    (tmp_path / "pids.json").write_text(json.dumps({"sleeper": [pid, 123456]}))
    assert book.load()["sleeper"] == (pid, None) and book.running("sleeper") == pid
    book.forget("sleeper")
    assert book.running("sleeper") is None


def test_a_child_run_to_its_end_is_ended_with_us_on_sigterm(tmp_path: Path) -> None:
    # `lab fault load` runs pgbench this way: stopping the command must not leave pgbench running.
    script = "from pgtop_ha.lab import procs\nprocs.run_child(['sleep', '60'], timeout=120)\n"
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path)
    try:
        assert procs.poll(lambda: bool(_children(parent.pid)), 20, interval=0.05), "sleep never started"
        (child,) = _children(parent.pid)
        parent.terminate()
        assert parent.wait(20) == 128 + 15
        assert procs.poll(lambda: not procs.alive(child), 20, interval=0.05), "the child outlived us"
    finally:
        parent.kill()
        parent.wait(10)


def test_a_child_is_ended_when_stop_when_gives_a_reason() -> None:
    # `lab fault load` stops pgbench this way when the disk runs low.
    started: list[int] = []
    asked = 0

    def stop_when() -> str | None:
        nonlocal asked
        asked += 1
        # Only our sleep: a lab started by another test may be a child of this process too.
        started.extend(pid for pid in _children(os.getpid()) if _cmdline(pid) == ["sleep", "617"])
        return "disk low" if asked >= 2 else None

    with pytest.raises(procs.ChildStopped, match="disk low"):
        procs.run_child(["sleep", "617"], timeout=120, stop_when=stop_when)
    assert asked == 2 and len(set(started)) == 1
    assert not procs.alive(started[0])
    assert procs.run_child(["true"], timeout=10, stop_when=lambda: "never asked") == 0


def _cmdline(pid: int) -> list[str]:
    try:
        return [str(part) for part in psutil.Process(pid).cmdline()]
    except psutil.Error:  # ended meanwhile
        return []


def _children(pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(pid).children()] if psutil.pid_exists(pid) else []
