"""`pgtop-ha snapshot` without a lab: the schema, nothing to poll, nothing reachable; read-path imports."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.snapshot_cli import run_snapshot
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import NodeSettings, Settings

DOCUMENTED: dict[str, list[str]] = {
    "taken_at": [],
    "cluster": ["name", "leader"],
    "members": ["name", "role", "state", "timeline", "lag_bytes", "host", "port", "api_url", "reachable"],
    "nodes": [
        "name",
        "in_recovery",
        "timeline",
        "error",
        "replication",
        "slots",
        "copy_progress",
        "archiver",
        "processes",
    ],
    "haproxy": ["servers"],
    "probes": [],
    "pgbouncer": [],
    "pgpool": [],
}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_schema_names_every_documented_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_snapshot(Settings(), schema=True) == 0
    schema = json.loads(capsys.readouterr().out)
    defs = schema["$defs"]
    for name in DOCUMENTED:
        assert name in schema["properties"]
    for model, fields in [
        ("Member", DOCUMENTED["members"]),
        ("NodeSnapshot", DOCUMENTED["nodes"]),
        ("Replication", ["application_name", "state", "sync_state", "replay_lag_bytes"]),
        (
            "Slot",
            [
                "slot_name",
                "slot_type",
                "active",
                "retained_bytes",
                "wal_status",
                "spill_bytes",
                "stream_bytes",
            ],
        ),
        ("CopyProgress", ["pid", "relation", "command", "bytes_processed", "tuples_processed", "percent"]),
        (
            "Archiver",
            ["archived_count", "failed_count", "last_archived_wal", "ready_count", "segments_behind"],
        ),
        ("Process", ["pid", "backend_type", "pss_bytes", "uss_bytes", "rss_bytes", "pagetable_bytes"]),
        ("HAProxyServer", ["proxy", "server", "status", "check_status", "sessions", "last_change_s"]),
        ("Probe", ["endpoint", "kind", "answered_by", "latency_ms", "ok", "error", "last_ok_at"]),
        ("PgBouncerState", ["name", "target", "ok", "error", "pools", "databases", "stats"]),
        ("BouncerPool", ["database", "user", "cl_active", "cl_waiting", "sv_active", "sv_idle", "maxwait_s"]),
        ("BouncerDatabase", ["name", "host", "port", "member", "paused"]),
        ("PgpoolState", ["name", "target", "ok", "error", "nodes", "processes"]),
        (
            "PgpoolNode",
            [
                "node_id",
                "host",
                "port",
                "status",
                "lb_weight",
                "role",
                "pg_role",
                "select_cnt",
                "replication_delay",
            ],
        ),
    ]:
        assert set(fields) <= set(defs[model]["properties"]), model


def test_nothing_to_poll_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nothing to poll"):
        run_snapshot(Settings(), schema=False)


def test_nothing_reachable_prints_snapshot_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = _closed_port()
    settings = Settings.model_validate(
        {
            "patroni": {"urls": [f"http://127.0.0.1:{port}"], "timeout": 1},
            "nodes": [{"name": "n1", "host": "127.0.0.1", "port": port}],
            "haproxy": {"url": f"http://127.0.0.1:{port}/stats"},
        }
    )
    assert run_snapshot(settings, schema=False) == 1
    out = capsys.readouterr()
    snap = json.loads(out.out)
    assert snap["nodes"][0]["name"] == "n1"
    assert snap["nodes"][0]["error"]
    assert snap["nodes"][0]["in_recovery"] is None  # unknown is null, never absent
    assert snap["haproxy"]["error"]
    assert snap["members"][0]["reachable"] is False
    assert len(out.err.strip().splitlines()) == 1
    assert "nothing was reachable" in out.err


async def test_static_nodes_without_patroni_are_polled() -> None:
    port = _closed_port()
    settings = Settings(nodes=(NodeSettings(name="solo", host="127.0.0.1", port=port),))
    poller = Poller.from_settings(settings)
    try:
        snap = await poller.cycle()
    finally:
        await poller.aclose()
    assert [n.name for n in snap.nodes] == ["solo"]
    assert snap.nodes[0].error and "refused" in snap.nodes[0].error
    assert snap.members[0].error == "no Patroni REST URL known"


def test_read_path_imports_no_ui_and_no_actions() -> None:
    code = (
        "import sys, pgtop_ha.collect.poller, pgtop_ha.collect.snapshot_cli, "
        "pgtop_ha.models.derive; "
        "bad = [m for m in sys.modules if m == 'textual' or m.startswith(('textual.', "
        "'pgtop_ha.actions', 'pgtop_ha.ui'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_reader_that_goes_away_is_not_a_crash() -> None:
    # `pgtop-ha snapshot --schema | head -1`: the schema (~90 KB) outgrows the pipe once the
    # reader has closed it; that ends the command quietly (141, as a shell reports SIGPIPE).
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgtop_ha", "snapshot", "--schema"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().strip() == b"{"
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 141, err
    assert "unexpected error" not in err and "Traceback" not in err
