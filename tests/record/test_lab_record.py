"""`pgtop-ha record` across a real `lab fault kill-primary`, with a marker from another process."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.record.reader import Recording
from pgtop_ha.record.report import build_report

pytestmark = pytest.mark.lab


def _wait(cond: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _count(path: Path) -> int:
    try:
        rec = Recording.open(path)
    except Exception:
        return 0
    try:
        return rec.count()
    finally:
        rec.close()


def _read(path: Path, read: Callable[[Recording], bool]) -> bool:
    """``read`` of the recording being written; False while it cannot be opened yet."""
    try:
        rec = Recording.open(path)
    except Exception:
        return False
    try:
        return read(rec)
    finally:
        rec.close()


def _reachable_in_last(path: Path, node: str) -> bool:
    def reachable(rec: Recording) -> bool:
        frame = rec.last()
        found = rec.snapshot(frame).node(node) if frame is not None else None
        return found is not None and found.reachable

    return _read(path, reachable)


RESTART = ("was interrupted", "not properly shut down", "redo starts", "ready to accept")


def _restart_told(path: Path, node: str) -> bool:
    """The recording holds a line of ``node``'s own log that tells its restart."""

    def told(rec: Recording) -> bool:
        events = build_report(rec)["events"]
        lines = [e["text"] for e in events if e["kind"] == "log" and e.get("node") == node]
        return any(w in text for text in lines for w in RESTART)

    return _read(path, told)


def _about(e: dict[str, Any], node: str, *words: str) -> bool:
    text = str(e.get("text", "")).lower()
    return e.get("node") == node and "postgresql" in text and any(w in text for w in words)


def test_record_across_kill_primary(lab: Lab, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "PGTOP_HA_"))}
    env.update(
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    (tmp_path / "run").mkdir(mode=0o700)
    path = tmp_path / "kill-primary.db"
    cmd = [sys.executable, "-m", "pgtop_ha", "record", str(path), "--config", str(lab.layout.console_config)]
    proc = subprocess.Popen([*cmd, "--interval", "0.5"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        _wait(lambda: _count(path) >= 4, 60, "the first cycles")
        mark = subprocess.run(
            [sys.executable, "-m", "pgtop_ha", "mark", "killing the primary"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert mark.returncode == 0, mark.stderr
        leader = lab.leader()
        assert leader is not None
        faults.kill_primary(Lab(lab.layout, out=io.StringIO()))
        # Patroni restarts PostgreSQL in place (design §3): wait until it is whole again.
        _wait(lambda: not lab.healthy(), 30, "the lab to notice")
        _wait(lab.healthy, 180, "the lab to recover")
        # The reader reconnects with backoff (up to BACKOFF_MAX_S): wait for the recording to
        # see the leader's PostgreSQL again, then a few more cycles.
        _wait(lambda: _reachable_in_last(path, leader), 60, "the recording to see the leader again")
        _wait(lambda: _restart_told(path, leader), 30, "the leader's own log to tell its restart")
        seen = _count(path)
        _wait(lambda: _count(path) >= seen + 2, 30, "a few cycles after recovery")
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    rec = Recording.open(path)
    try:
        report = build_report(rec)
        last = list(rec.snapshots())[-1]
    finally:
        rec.close()
    events = report["events"]
    texts = [f"{e.get('node')}: {e.get('text')}" for e in events]
    assert report["complete"] and report["span"]["snapshots"] >= 10
    assert any(e["kind"] == "marker" and e["text"] == "killing the primary" for e in events), texts
    # The leader's PostgreSQL went down (an event), and the recording saw it come back.
    assert any(_about(e, leader, "unreachable", "down") for e in events), texts
    # Its own log told the restart (read back after the crash), in order with the console's events.
    down = min(e["at"] for e in events if _about(e, leader, "unreachable", "down"))
    told = [e for e in events if e["kind"] == "log" and e.get("node") == leader]
    restart = RESTART
    assert any(w in e["text"] for e in told for w in restart), texts
    assert all(e["source"] == "postgres" for e in told)
    assert min(e["at"] for e in told if any(w in e["text"] for w in restart)) >= down, texts
    back = last.node(leader)
    assert back is not None and back.reachable, texts
    # Its Patroni kept answering (slowly, "state: crashed"): never reported unreachable (design §5).
    assert not any(
        e.get("node") == leader and "patroni rest unreachable" in str(e.get("text")).lower() for e in events
    ), texts
