"""`pgtop-ha record` across a real leader loss (crash, and Patroni stopped), read back with `events --json`.

The marker from another process is covered by test_lab_record.py (kill-primary).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.record.reader import Recording

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]


def _wait(cond: Callable[[], bool], within: float, what: str, state: Callable[[], object] = str) -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {state()}")
        time.sleep(0.2)


def _count(path: Path) -> int:
    try:
        rec = Recording.open(path)
    except Exception:
        return 0  # not created yet, or its header not committed yet
    try:
        return rec.count()
    finally:
        rec.close()


def _writer_up_on(lab: Lab) -> set[str]:
    """The servers HAProxy's writer pool has UP now, from its stats CSV."""
    try:
        text = httpx.get(f"{lab.layout.stats_url};csv", timeout=2, trust_env=False).text
    except httpx.HTTPError:
        return set()
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        return set()
    status = lines[0][2:].split(",").index("status")
    rows = [line.split(",") for line in lines[1:]]
    servers = [
        r for r in rows if len(r) > status and r[0] == "pg_writer" and r[1] not in ("FRONTEND", "BACKEND")
    ]
    return {r[1] for r in servers if r[status] == "UP"}


def _writer_rows(lab: Lab) -> Callable[[], object]:
    def rows() -> object:
        try:
            text = httpx.get(f"{lab.layout.stats_url};csv", timeout=2, trust_env=False).text
        except httpx.HTTPError as exc:
            return exc
        return [
            ",".join(line.split(",")[:20])
            for line in text.splitlines()
            if line.startswith(("#", "pg_writer"))
        ]

    return rows


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "PGTOP_HA_"))}
    run = tmp_path / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    env.update(XDG_RUNTIME_DIR=str(run), PYTHONPATH=str(ROOT))
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "pgtop_ha", *args]


class _Recorder:
    """A headless recorder running as its own process; stopped with SIGINT."""

    def __init__(self, lab: Lab, path: Path, env: dict[str, str]) -> None:
        cmd = _cli("record", str(path), "--config", str(lab.layout.console_config), "--interval", "0.5")
        self.path = path
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)

    def wait_cycles(self, more: int, within: float) -> None:
        seen = _count(self.path)
        _wait(
            lambda: self.proc.poll() is None and _count(self.path) >= seen + more, within, "recorder cycles"
        )

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        return out


@pytest.fixture
def recorder(lab: Lab, tmp_path: Path) -> Iterator[_Recorder]:
    """A recorder already recording a healthy lab; always stopped (never left running)."""
    rec = _Recorder(lab, tmp_path / "failover.db", _env(tmp_path))
    try:
        rec.wait_cycles(4, 60)
        yield rec
    finally:
        if rec.proc.poll() is None:
            rec.proc.kill()  # a test that failed before its own stop
            rec.proc.wait(timeout=30)


def _across(lab: Lab, rec: _Recorder, fault: Callable[[Lab, str], str]) -> tuple[str, str, dict[str, Any]]:
    """Apply ``fault`` to the leader, wait for a new leader with the writer pool on it, then report."""
    leader = lab.leader()
    assert leader is not None
    fault(Lab(lab.layout, out=io.StringIO()), leader)

    def new_leader() -> str | None:
        now = lab.leader()
        return now if now not in (None, leader) else None

    _wait(lambda: new_leader() is not None, 120, "a new leader")
    new = new_leader()
    assert new is not None
    _wait(lambda: _writer_up_on(lab) == {new}, 60, f"HAProxy's writer pool on {new} only", _writer_rows(lab))
    rec.wait_cycles(6, 30)  # the recorder sees writes served again
    out = rec.stop()
    assert rec.proc.returncode == 0, out
    shown = subprocess.run(
        _cli("events", str(rec.path), "--json"),
        env=_env(rec.path.parent),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    report: dict[str, Any] = json.loads(shown.stdout)
    return leader, new, report


def _check(leader: str, new: str, report: dict[str, Any]) -> dict[str, Any]:
    events = report["events"]
    texts = [f"{e.get('kind')} {e.get('node')}: {e.get('text')}" for e in events]
    assert report["complete"], texts
    # Leader lost, new leader: as timeline events and as the stopwatch's own milestones.
    lost = (f"leader lost: {leader} → none", f"leader {leader} → {new}")
    assert any(e["kind"] == "leader" and e["text"] in lost for e in events), texts
    assert any(e["kind"] == "failover" and f"new leader {new}" in e["text"] for e in events), texts
    failovers = [f for f in report["failovers"] if f["old_leader"] == leader]
    assert len(failovers) == 1, report["failovers"]
    f: dict[str, Any] = failovers[0]
    assert f["new_leader"] == new, f
    assert isinstance(f["election_s"], int | float) and f["election_s"] >= 0, f
    # The writer outage through HAProxy: from, to, and a duration above zero.
    assert f["write_outage_from"] and f["write_outage_to"], f
    assert isinstance(f["write_outage_s"], int | float) and f["write_outage_s"] > 0, f
    assert isinstance(f["lag_at_promotion_bytes"], int) and f["lag_at_promotion_bytes"] >= 0, f
    return f


def test_record_across_crash_of_the_leader(lab: Lab, recorder: _Recorder) -> None:
    leader, new, report = _across(lab, recorder, faults.crash)
    f = _check(leader, new, report)
    # A power cut: the stopwatch also timed from when the old leader stopped answering.
    assert f["leader_down_at"] is not None, f
    assert datetime.fromisoformat(f["leader_down_at"]) <= datetime.fromisoformat(f["elected_at"]), f


def test_record_across_patroni_stopped_on_the_leader(lab: Lab, recorder: _Recorder) -> None:
    leader, new, report = _across(lab, recorder, faults.stop_patroni)
    f = _check(leader, new, report)
    # A graceful stop hands over: the new leader was named, and the outage ended.
    assert f["elected_at"] is not None and f["write_outage_to"] is not None, f
