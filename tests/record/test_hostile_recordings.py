"""Readers never crash on a file: a row that does not parse is skipped and counted."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.reader import Recording
from pgtop_ha.record.replay import ReplaySource
from tests.record.helpers import failover_script, record_script

PGTOP = [sys.executable, "-m", "pgtop_ha"]
NESTED = "[" * 100_000 + "]" * 100_000


def _hostile(tmp_path: Path) -> Path:
    """A real recording, copied into tables without constraints, with broken rows beside the good."""
    good = tmp_path / "good.db"
    record_script(good, failover_script(healthy=3, after=3))
    bad = tmp_path / "bad.db"
    src = sqlite3.connect(good)
    dst = sqlite3.connect(bad)
    dst.executescript(
        "CREATE TABLE header (key TEXT, value TEXT);"
        "CREATE TABLE snapshots (id INTEGER PRIMARY KEY, taken_at, data);"
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, at, kind, data);"
        "CREATE TABLE markers (id INTEGER PRIMARY KEY, at, text, source);"
    )
    for table, n in (("header", 2), ("snapshots", 3), ("events", 4), ("markers", 4)):
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        dst.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * n)})", rows)
    first = src.execute("SELECT min(taken_at) FROM snapshots").fetchone()[0]
    dst.executemany(
        "INSERT INTO snapshots (taken_at, data) VALUES (?, ?)",
        [
            (first + 0.5, zlib.compress(NESTED.encode())),  # nested past any parser's depth
            (first + 0.6, None),  # NULL data
            (first + 0.7, b"not zlib"),
            ("soon", zlib.compress(b"{}")),  # a time that is no number
            (1e300, zlib.compress(b"{}")),  # a time out of range
        ],
    )
    dst.executemany(
        "INSERT INTO events (at, kind, data) VALUES (?, ?, ?)",
        [(first, "x", NESTED), (first, "x", None), (first, "x", json.dumps({"at": "never", "kind": "x"}))],
    )
    dst.executemany(
        "INSERT INTO markers (at, text, source) VALUES (?, ?, ?)",
        [("soon", "t", "s"), (1e300, "t", "s"), (first, None, "s")],
    )
    dst.commit()
    return bad


def test_events_skips_and_counts_what_it_cannot_read(tmp_path: Path) -> None:
    bad = _hostile(tmp_path)
    out = subprocess.run([*PGTOP, "events", str(bad), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    # Five snapshots (nested, NULL, not zlib, two times that are no time), three events, three markers.
    assert report["skipped_rows"] == 11, report["skipped_rows"]
    assert report["span"]["snapshots"] == 8  # the 6 good ones and the 2 broken ones whose time reads
    assert [(f["old_leader"], f["new_leader"]) for f in report["failovers"]] == [("node1", "node2")]
    text = subprocess.run([*PGTOP, "events", str(bad)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and "11 rows could not be read and were skipped" in text.stdout


def test_replay_plays_past_rows_it_cannot_read(tmp_path: Path) -> None:
    recording = Recording.open(_hostile(tmp_path))
    replay = ReplaySource(recording, playing=False)
    shown: list[ClusterSnapshot] = []
    frame = recording.first()
    while frame is not None:
        replay._show(frame, shown.append)
        frame = recording.after(frame)
    assert len(shown) == 6 and recording.skipped == 2 + 3  # its two damaged snapshots, once each; the events


def test_a_file_that_is_no_recording_is_one_line_and_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    out = subprocess.run([*PGTOP, "events", str(junk)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
