"""`pgtop-ha record` as a real process: kill -9 leaves a readable file, markers from another process,
no password in the file, SIGTERM stops it cleanly, no Textual import; `events --json` shape."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pgtop_ha.cli import main
from pgtop_ha.collect.poller import Poller
from pgtop_ha.record.reader import Recording
from tests.record.helpers import failover_script, record_script

PASSWORD = "envpass-1234"
URL_SECRET = "urlpass-5678"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGTOP_HA_")}
    env.update(
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # no user config file
        PGTOP_HA_PATRONI_PASSWORD=PASSWORD,
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    (tmp_path / "run").mkdir(mode=0o700)
    return env


def _wait(cond: Callable[[], bool], within: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _snapshots(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM snapshots").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, dict[str, str]]]:
    """A real `pgtop-ha record` pointed at nothing real (each cycle records its errors)."""
    env = _env(tmp_path)
    path = tmp_path / "rec.db"
    url = f"http://admin:{URL_SECRET}@127.0.0.1:{_closed_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgtop_ha", "record", str(path), "--patroni", url, "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait(lambda: _snapshots(path) >= 3 or proc.poll() is not None, what="3 recorded cycles")
        assert proc.poll() is None, proc.communicate()
        yield proc, path, env
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_kill_9_leaves_a_readable_recording(
    recorder: tuple[subprocess.Popen[str], Path, dict[str, str]],
) -> None:
    proc, path, _ = recorder
    seen = _snapshots(path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rec = Recording.open(path)
    try:
        snaps = list(rec.snapshots())
        assert len(snaps) >= seen >= 3  # every committed cycle is there
        assert all(s.errors or any(m.error for m in s.members) for s in snaps)
        assert "ended_at" not in rec.header  # killed: not closed, but whole
    finally:
        rec.close()


def test_sigterm_stops_cleanly_and_no_password_is_recorded(
    recorder: tuple[subprocess.Popen[str], Path, dict[str, str]],
) -> None:
    proc, path, _ = recorder
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "recording to" in out and " recorded " in out and "cycles" in out
    assert PASSWORD not in out + err and URL_SECRET not in out + err
    assert not Path(f"{path}-wal").exists()  # closed: the log is folded into the file
    raw = path.read_bytes()
    conn = sqlite3.connect(path)
    inflated = b"".join(zlib.decompress(d) for (d,) in conn.execute("SELECT data FROM snapshots"))
    rows = json.dumps(
        [list(r) for t in ("header", "events", "markers") for r in conn.execute(f"SELECT * FROM {t}")]
    )
    header = dict(conn.execute("SELECT key, value FROM header").fetchall())
    conn.close()
    for secret in (PASSWORD, URL_SECRET):
        assert secret.encode() not in raw and secret.encode() not in inflated and secret not in rows
    assert "ended_at" in header
    (url,) = json.loads(header["settings"])["patroni"]["urls"]
    assert url.startswith("http://***@127.0.0.1:")


def test_marker_from_another_process_lands_in_the_recording(
    recorder: tuple[subprocess.Popen[str], Path, dict[str, str]],
) -> None:
    proc, path, env = recorder
    sockets = Path(env["XDG_RUNTIME_DIR"]) / "pgtop-ha"
    _wait(lambda: (sockets / f"{proc.pid}.sock").exists(), what="the recorder's socket")
    done = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "mark", "killed", "primary"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert "1 timeline" in done.stdout and f"pid {proc.pid}" in done.stdout

    def marked() -> bool:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = conn.execute("SELECT count(*) FROM markers WHERE text = 'killed primary'").fetchone()
            return bool(found[0] == 1)
        finally:
            conn.close()

    _wait(marked, what="the marker row")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert not (sockets / f"{proc.pid}.sock").exists()
    rec = Recording.open(path)
    try:
        assert [e.text for e in rec.events() if e.kind == "marker"] == ["killed primary"]
    finally:
        rec.close()
    # With the recorder gone, nobody listens: exit 1 with one line.
    gone = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "mark", "again"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1 and "no running console" in gone.stderr


def test_headless_paths_do_not_import_textual() -> None:
    code = (
        "import sys, pgtop_ha.cli, pgtop_ha.record.headless, pgtop_ha.record.report, pgtop_ha.record.markers;"
        "import pgtop_ha.record.replay;"
        "pgtop_ha.cli._parser();"
        "assert 'textual' not in sys.modules, 'textual imported';"
        "assert 'pgtop_ha.actions' not in sys.modules, 'actions imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_record_refuses_nothing_to_poll_and_bad_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", str(tmp_path / "a.db"), "--config", str(_empty_config(tmp_path))]) == 2
    assert "nothing to record" in capsys.readouterr().err
    assert (
        main(["record", str(tmp_path / "b.db"), "--patroni", "http://127.0.0.1:1", "--record-max", "lots"])
        == 2
    )
    assert "--record-max" in capsys.readouterr().err
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()


def test_record_sends_the_write_probe_asked_for_only_as_an_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "probe.toml"
    config.write_text(
        '[patroni]\nurls = ["http://127.0.0.1:1"]\n'
        '[[probes.endpoints]]\nname = "writer"\nhost = "127.0.0.1"\nport = 1\nkind = "writer"\n'
    )
    sources: list[Poller] = []

    def recorded(settings: object, path: object, limit: object, source: Poller) -> int:
        sources.append(source)
        return 0

    monkeypatch.setattr("pgtop_ha.record.headless.run_record", recorded)
    base = ["record", str(tmp_path / "r.db"), "--config", str(config), "--probe-writes", "probe_t"]
    assert main([*base, "--operator"]) == 0
    assert [p.kind for p in sources[-1]._probes] == ["writer", "write"]
    assert main([*base, "--read-only"]) == 0
    assert [p.kind for p in sources[-1]._probes] == ["writer"]
    assert "write probe off: read-only mode sends no INSERT" in capsys.readouterr().out


def _empty_config(tmp_path: Path) -> Path:
    path = tmp_path / "empty.toml"
    path.write_text("")
    return path


def test_events_json_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "rec.db"
    record_script(path, failover_script(), markers=[(5, "killed primary")])
    assert main(["events", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {
        "recording",
        "header",
        "complete",
        "stopped",
        "disk_full",
        "span",
        "events",
        "markers",
        "failovers",
        "skipped_rows",
    }
    assert report["skipped_rows"] == 0 and report["stopped"] is None
    assert report["complete"] is True
    assert report["span"]["snapshots"] == 10 and report["span"]["seconds"] == 9.0
    assert report["header"]["pgtop_ha_version"] and report["header"]["python_version"]
    assert report["markers"] == [
        {"at": "2025-01-02T03:04:09.500000+00:00", "text": "killed primary", "source": "test"}
    ]
    kinds = [e["kind"] for e in report["events"]]
    assert kinds[0] == "marker" and "leader" in kinds
    for e in report["events"]:
        assert {"at", "kind", "node", "text", "severity"} <= set(e)
    # The stopwatch, recomputed from the snapshots: node1 lost, node2 elected at the same cycle.
    (failover,) = report["failovers"]
    assert (failover["old_leader"], failover["new_leader"]) == ("node1", "node2")
    assert failover["lost_at"] == "2025-01-02T03:04:10Z" and failover["election_s"] == 0.0
    assert {"write_outage_s", "lag_at_promotion_bytes", "replicas_streaming_s", "permanent_slots_ok"} <= set(
        failover
    )
    # The readable table says the same.
    assert main(["events", str(path)]) == 0
    table = capsys.readouterr().out
    assert "killed primary" in table and "leader node1 → node2" in table
    assert "1. 03:04:10.000 leader node1 lost → node2 elected after 0.0 s" in table


def test_events_on_a_non_recording_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("nope")
    assert main(["events", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a pgtop-ha recording" in err
