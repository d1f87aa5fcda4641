"""The recording file: round trip, seeks, events kept in sync, bounds, no secrets, bad files."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import zlib
from collections import deque
from datetime import timedelta
from pathlib import Path

import pytest

from pgtop_ha.errors import UserError
from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot, Process
from pgtop_ha.record.limits import RecordLimit, parse_limit
from pgtop_ha.record.reader import Frame, Recording
from pgtop_ha.record.recorder import EventLog, Recorder
from pgtop_ha.record.scrub import scrub
from pgtop_ha.record.store import epoch
from pgtop_ha.settings import Settings
from tests.record.helpers import failover_script, record_script
from tests.ui import fixtures as fx


def test_round_trip_snapshots_events_markers_header(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    script = failover_script()
    record_script(path, script, markers=[(5, "killed primary")])
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    rec = Recording.open(path)
    try:
        assert rec.count() == len(script)
        assert list(rec.snapshots()) == script
        h = rec.header
        assert h["format_version"] == 1 and h["role"] == "test"
        for key in ("pgtop_ha_version", "python_version", "textual_version", "sqlite_version", "ended_at"):
            assert h.get(key), key
        assert h["settings"]["cluster_name"] == "pgtop-lab"
        assert [(m.text, m.source) for m in rec.markers()] == [("killed primary", "test")]
        kinds = [e.kind for e in rec.events()]
        assert "marker" in kinds and "leader" in kinds
        leader = next(e for e in rec.events() if e.kind == "leader")
        assert leader.text == "leader node1 → node2"
        assert leader.at == script[5].taken_at
        # The marker came half a second before the leader change: time order holds in the file.
        assert kinds.index("marker") < kinds.index("leader")
    finally:
        rec.close()


def test_seek_by_time_and_step(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    script = failover_script(step_s=2.0)
    record_script(path, script)
    rec = Recording.open(path)
    try:
        t3 = epoch(script[3].taken_at)
        assert rec.at_or_before(t3 + 1.5) == rec.at_or_after(t3 - 0.5)
        frame = rec.at_or_before(t3 + 1.5)
        assert frame is not None and rec.snapshot(frame) == script[3]
        assert rec.position(frame) == 3
        nxt = rec.after(frame)
        assert nxt is not None and rec.snapshot(nxt) == script[4]
        assert [rec.snapshot(f) for f in rec.before(frame, 2)] == script[1:3]
        assert rec.at_or_before(epoch(script[0].taken_at) - 1) is None
        # Seeks use the time index, not a scan.
        conn = sqlite3.connect(path)
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT taken_at, id FROM snapshots WHERE taken_at <= ? "
            "ORDER BY taken_at DESC, id DESC LIMIT 1",
            (t3,),
        ).fetchall()
        conn.close()
        assert "snapshots_taken_at" in str(plan)
    finally:
        rec.close()


def _ev(i: int, text: str = "") -> Event:
    return Event(at=fx.T0 + timedelta(seconds=i), kind="test", text=text or f"event {i}")


def test_event_log_appends_replacements_front_drops_and_withdrawals() -> None:
    log = EventLog()
    a, b, c = _ev(1), _ev(2), _ev(3)
    writes, deletes = log.sync([a, b])
    assert [(s, e.text) for s, e in writes] == [(0, "event 1"), (1, "event 2")] and deletes == []
    assert log.sync([a, b]) == ([], [])
    # A debounced event gets its duration: a new object in the same place, rewritten under its number.
    b2 = b.model_copy(update={"text": "event 2 (4.2 s)"})
    writes, _ = log.sync([a, b2, c])
    assert [(s, e.text) for s, e in writes] == [(1, "event 2 (4.2 s)"), (2, "event 3")]
    # A bounded list drops its oldest: nothing is deleted from the file, the new one is appended.
    window: deque[Event] = deque([a, b2, c], maxlen=3)
    d = _ev(4)
    window.append(d)
    writes, deletes = log.sync(window)
    assert [(s, e.text) for s, e in writes] == [(3, "event 4")] and deletes == []
    # An event withdrawn from the end is deleted.
    writes, deletes = log.sync([b2, c])
    assert writes == [] and deletes == [3]


def _noisy(i: int) -> ClusterSnapshot:
    # ~2 KB that zlib cannot shrink, so each snapshot costs real pages.
    return fx.healthy(fx.T0 + timedelta(seconds=i)).model_copy(update={"errors": (os.urandom(1500).hex(),)})


def test_size_limit_thins_oldest_snapshots_keeps_events_and_newest(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    limit = parse_limit("200KiB")
    script = [_noisy(i) for i in range(400)]
    marks = [(i, f"marker {i}") for i in range(0, 400, 50)]
    recorder = record_script(path, script, limit=limit, markers=marks)
    assert recorder.thinned > 0
    assert limit.max_bytes is not None
    conn = sqlite3.connect(path)
    pages, free, size = (
        conn.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count", "page_size")
    )
    conn.close()
    assert (pages - free) * size <= limit.max_bytes
    # The file itself stays near the limit: freed pages are reused before it grows.
    assert path.stat().st_size <= limit.max_bytes * 1.25
    rec = Recording.open(path)
    try:
        times = [f.taken_at for f in _frames(rec)]
        assert 4 <= len(times) < 400
        # The newest part keeps one snapshot per second; the oldest part is sparser.
        assert times[-1] == epoch(script[-1].taken_at)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert gaps[-1] == 1.0 and max(gaps[: len(gaps) // 4]) > 1.0
        assert [m.text for m in rec.markers()] == [t for _, t in marks]
        assert [e.text for e in rec.events() if e.kind == "marker"] == [t for _, t in marks]
        assert rec.header["snapshots_thinned"] == recorder.thinned
        assert rec.header["thinned_until"] < times[-1]
    finally:
        rec.close()


def _frames(rec: Recording) -> list[Frame]:
    out = []
    frame = rec.first()
    while frame is not None:
        out.append(frame)
        frame = rec.after(frame)
    return out


def test_age_limit_drops_snapshots_older_than_the_window(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    script = [fx.healthy(fx.T0 + timedelta(seconds=10 * i)) for i in range(30)]  # 290 s
    record_script(path, script, limit=RecordLimit(max_age_s=60), markers=[(0, "start")])
    rec = Recording.open(path)
    try:
        times = [f.taken_at for f in _frames(rec)]
        assert times[0] == epoch(script[-1].taken_at) - 60
        assert len(times) == 7
        assert [m.text for m in rec.markers()] == ["start"]
    finally:
        rec.close()


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1GiB", RecordLimit(max_bytes=1024**3)),
        ("500MB", RecordLimit(max_bytes=500 * 1000**2)),
        ("64 KiB", RecordLimit(max_bytes=64 * 1024)),
        ("6h", RecordLimit(max_age_s=6 * 3600)),
        ("90m", RecordLimit(max_age_s=90 * 60)),
        ("1.5d", RecordLimit(max_age_s=1.5 * 86400)),
    ],
)
def test_parse_limit(text: str, expect: RecordLimit) -> None:
    assert parse_limit(text) == expect


@pytest.mark.parametrize("text", ["", "lots", "10", "1 parsec", "-5h", "30s", "1KB"])
def test_parse_limit_refuses_with_one_line(text: str) -> None:
    with pytest.raises(UserError) as err:
        parse_limit(text)
    assert "--record-max" in str(err.value) and "\n" not in str(err.value)


def test_no_secret_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    settings = fx.settings(
        patroni={"urls": ["http://admin:urlsecret@127.0.0.1:8008"]},
        haproxy={"url": "http://stats:statsecret@127.0.0.1:7000/stats"},
        patroni_password="envsecret",
    )
    snap = fx.healthy()
    node = snap.nodes[0]
    leaky = node.model_copy(
        update={
            "error": "connect http://admin:urlsecret@127.0.0.1:8008 refused",
            "processes": (
                Process(pid=1, query="ALTER ROLE app PASSWORD 'sqlsecret'"),
                Process(
                    pid=2, query="CREATE SUBSCRIPTION s CONNECTION 'host=a password=connsecret' PUBLICATION p"
                ),
            ),
        }
    )
    snap = snap.model_copy(
        update={"nodes": (leaky, *snap.nodes[1:]), "errors": ('x@y "http://u:urlsecret@h"',)}
    )
    recorder = Recorder.create(path, settings, parse_limit("1GiB"), role="test")
    ev = Event(at=snap.taken_at, kind="test", text="GET http://admin:urlsecret@h failed")
    recorder.marker(snap.taken_at, "pw is in postgresql://me:urlsecret@db/x", "test", [ev])
    recorder.cycle(snap, [ev])
    recorder.close()
    raw = path.read_bytes()
    conn = sqlite3.connect(path)
    texts = [zlib.decompress(d).decode() for (d,) in conn.execute("SELECT data FROM snapshots")]
    texts += [str(v) for row in conn.execute("SELECT * FROM header") for v in row]
    texts += [str(v) for row in conn.execute("SELECT * FROM events") for v in row]
    texts += [str(v) for row in conn.execute("SELECT * FROM markers") for v in row]
    conn.close()
    everything = "\n".join(texts)
    for secret in ("urlsecret", "statsecret", "envsecret", "sqlsecret", "connsecret"):
        assert secret.encode() not in raw, secret
        assert secret not in everything, secret
    # Still valid JSON, still the same snapshot apart from the masked parts.
    stored = json.loads(texts[0])
    assert stored["nodes"][0]["processes"][0]["query"] == "ALTER ROLE app PASSWORD '***'"
    assert stored["errors"] == ['x@y "http://***@h"']


def test_scrub_keeps_ordinary_text() -> None:
    for text in ('password authentication failed for user "lab"', "a@b.c", "no secrets here"):
        assert scrub(text) == text


def test_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    path.write_text("precious")
    with pytest.raises(UserError, match="already exists"):
        Recorder.create(path, fx.settings(), parse_limit("1GiB"), role="test")
    assert path.read_text() == "precious"
    with pytest.raises(UserError, match="no such directory"):
        Recorder.create(tmp_path / "nope" / "rec.db", fx.settings(), parse_limit("1GiB"), role="test")


def test_not_a_recording_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"hello, not sqlite" * 100)
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    for path in (junk, other, tmp_path / "missing.db"):
        with pytest.raises(UserError) as err:
            Recording.open(path)
        assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_a_bomb_row_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    record_script(path, failover_script(1, 0))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE snapshots SET data = ?", (zlib.compress(b" " * (80 * 1024 * 1024)),))
    conn.commit()
    conn.close()
    rec = Recording.open(path)
    try:
        assert list(rec.snapshots()) == [] and rec.skipped == 1  # skipped, counted, never inflated
        frame = rec.first()
        assert frame is not None
        with pytest.raises(UserError, match="64 MiB"):
            rec.snapshot(frame)
    finally:
        rec.close()


def test_write_error_stops_the_recorder_without_raising(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    recorder = Recorder.create(path, fx.settings(), parse_limit("1GiB"), role="test")
    recorder._conn.close()  # as if the file went away under it
    recorder.cycle(fx.healthy(), [])
    assert recorder.error is not None and str(path) in recorder.error
    recorder.cycle(fx.healthy(), [])  # a no-op from now on
    recorder.close()


def test_a_replayed_recording_is_cleaned_of_escape_sequences(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    hostile = "\x1b]0;pwned\x07node1\x1b[2J\x9b1m"
    snap = fx.healthy().model_copy(update={"errors": (hostile,)})
    recorder = Recorder.create(path, fx.settings(), parse_limit("1GiB"), role="test")
    ev = Event(at=snap.taken_at, kind="test", text=hostile)
    recorder.marker(snap.taken_at, "plain", "test", [ev])
    recorder.cycle(snap, [ev])
    recorder.close()
    # As if someone crafted the file: put the raw sequences back into the marker row too.
    conn = sqlite3.connect(path)
    conn.execute("UPDATE markers SET text = ?", (hostile,))
    conn.commit()
    conn.close()
    rec = Recording.open(path)
    try:
        (back,) = list(rec.snapshots())
        assert back.errors == ("node1",)
        assert [e.text for e in rec.events()] == ["node1"]
        assert [m.text for m in rec.markers()] == ["node1"]
    finally:
        rec.close()


def test_markers_count_under_the_size_limit(tmp_path: Path) -> None:
    """A flood of markers stops at --record-max: the rest are refused and counted, never stored past it."""
    path = tmp_path / "rec.db"
    limit = parse_limit("64KiB")
    rec = Recorder.create(path, Settings(), limit, role="serve")
    snap = failover_script()[0]
    rec.cycle(snap, [])
    at = snap.taken_at
    for i in range(2000):
        rec.marker(at + timedelta(milliseconds=i), f"flood {i} " + "z" * 300, "viewer", [])
    assert rec.markers_refused > 0 and rec.markers + rec.markers_refused == 2000
    assert limit.max_bytes is not None and rec.used_bytes() <= limit.max_bytes + 8192
    rec.close()
    recording = Recording.open(path)
    try:
        assert recording.header["markers_refused"] == rec.markers_refused
        assert len(recording.markers()) == rec.markers
    finally:
        recording.close()


def test_a_recorder_that_cannot_write_says_so_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgtop_ha.cli import main
    from pgtop_ha.record import recorder as recorder_module

    path = tmp_path / "rec.db"
    rec = Recorder.create(path, Settings(), parse_limit("1GiB"), role="record")
    script = failover_script()
    rec.cycle(script[0], [])

    def full(_text: str) -> bytes:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(recorder_module, "compress", full)
    rec.cycle(script[1], [])
    assert rec.error is not None and "disk is full" in rec.error
    assert main(["events", str(path)]) == 0
    out = capsys.readouterr().out
    assert "the recorder stopped early (database or disk is full)" in out and "killed" not in out
