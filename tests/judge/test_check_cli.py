"""`pgtop-ha check` without a lab: what it says and returns when it cannot judge."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

PGTOP = [sys.executable, "-m", "pgtop_ha"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PGTOP, "check", *args], capture_output=True, text=True, timeout=60, check=False)


def test_nothing_reachable_is_unknown_on_one_line() -> None:
    out = _check("--patroni", f"http://127.0.0.1:{_closed_port()}")
    assert out.returncode == 3, out
    first = out.stdout.splitlines()[0]
    assert first.startswith("PGTOP-HA UNKNOWN - nothing was reachable (patroni /cluster: ")
    assert "Traceback" not in out.stderr + out.stdout


def test_a_bad_config_is_unknown_naming_the_file(tmp_path: Path) -> None:
    out = _check("--config", str(tmp_path / "missing.toml"))
    assert out.returncode == 3
    assert out.stdout.strip() == f"PGTOP-HA UNKNOWN - config file {tmp_path / 'missing.toml'} not found; " + (
        "check --config or create it"
    )


def test_wait_healthy_takes_positive_seconds_only() -> None:
    # A wrong invocation is UNKNOWN (3) with a status line, as a monitoring plugin must say.
    out = _check("--wait-healthy", "soon")
    assert out.returncode == 3 and "UNKNOWN - usage: " in out.stdout
    assert "'soon' is not a number of seconds" in out.stdout
    out = _check("--wait-healthy", "-5")
    assert out.returncode == 3 and "give seconds between 0 and 86400" in out.stdout
