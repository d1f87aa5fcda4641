"""Settings: file, env and CLI layers, and one clear line (exit 2) for each kind of bad config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pgtop_ha.cli import cli_overrides, resolve_read_only
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import load_settings


def _run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgtop_ha", *args],
        capture_output=True, text=True, timeout=60, env=env, cwd=cwd,
    )  # fmt: skip


def test_example_config_is_valid() -> None:
    settings = load_settings(Path("config/example.toml"), environ={})
    assert settings.patroni.urls
    assert settings.postgres.user == "pgtop_monitor"
    assert settings.patroni.verify is True


def test_layers_file_then_env_then_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('interval = 5.0\ntheme = "light"\n[postgres]\nuser = "from_file"\n')
    env = {"PGTOP_HA_INTERVAL": "3", "PGTOP_HA_PG_USER": "from_env", "PGTOP_HA_POSTGRES__DBNAME": "envdb"}
    s = load_settings(cfg, {"interval": 2.0}, environ=env)
    assert s.interval == 2.0
    assert s.postgres.user == "from_env"
    assert s.postgres.dbname == "envdb"
    assert s.theme == "light"


def test_quick_start_flags_without_a_file(tmp_path: Path) -> None:
    import argparse

    ns = argparse.Namespace(
        patroni=["http://127.0.0.1:8008", "http://127.0.0.1:8009"],
        haproxy="/run/haproxy/admin.sock",
        pg_user="mon",
    )
    s = load_settings(None, cli_overrides(ns), environ={})
    assert s.patroni.urls == ("http://127.0.0.1:8008", "http://127.0.0.1:8009")
    assert s.haproxy.socket == Path("/run/haproxy/admin.sock")
    assert s.postgres.user == "mon"


def test_settings_are_frozen() -> None:
    s = load_settings(None, environ={})
    with pytest.raises(Exception, match="frozen"):
        s.interval = 3  # type: ignore[misc]


def test_patroni_password_only_from_env_or_file(tmp_path: Path) -> None:
    s = load_settings(None, environ={"PGTOP_HA_PATRONI_PASSWORD": "s3cret"})
    secret = s.patroni_secret()
    assert secret is not None
    assert secret.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(s)
    assert "s3cret" not in s.model_dump_json()
    cfg = tmp_path / "c.toml"
    cfg.write_text('patroni_password = "x"\n')
    with pytest.raises(ConfigError, match="PGTOP_HA_PATRONI_PASSWORD"):
        load_settings(cfg, environ={})


def test_read_only_auto_in_ssh() -> None:
    s = load_settings(None, environ={})
    assert resolve_read_only(s, {"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"}) is True
    assert resolve_read_only(s, {}) is False
    operator = load_settings(None, {"read_only": False}, environ={})
    assert resolve_read_only(operator, {"SSH_CONNECTION": "x"}) is False
    env_ro = load_settings(None, environ={"PGTOP_HA_READ_ONLY": "1"})
    assert resolve_read_only(env_ro, {}) is True


BAD_CASES = [
    ("missing file", None, "not found"),
    ("bad toml", "interval = = 1\n", "not valid TOML"),
    ("unknown key", "intervall = 1\n", "unknown key 'intervall'"),
    ("unknown nested key", "[postgres]\nusr = 'x'\n", "unknown key 'postgres.usr'"),
    ("wrong type", "interval = 'fast'\n", "interval"),
    ("bad url", "[patroni]\nurls = ['ftp://x:8008']\n", "patroni.urls: 'ftp://x:8008' is not an http(s) URL"),
    ("bad port", "[[nodes]]\nname = 'a'\nhost = 'h'\nport = 70000\n", "nodes.0.port"),
]


@pytest.mark.parametrize(("case", "text", "expect"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, case: str, text: str | None, expect: str) -> None:
    cfg = tmp_path / "bad.toml"
    if text is not None:
        cfg.write_text(text)
    out = _run("--config", str(cfg), "snapshot", "--json")
    assert out.returncode == 2, (case, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert expect in lines[0]
    assert str(cfg) in lines[0]
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


def test_bad_flag_value_is_one_line(tmp_path: Path) -> None:
    out = _run("--patroni", "not-a-url", "snapshot", "--json", cwd=tmp_path)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "patroni.urls" in out.stderr
    assert "http://" in out.stderr


def test_bad_env_is_one_line(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "PGTOP_HA_INTERVAL": "soon"}
    out = _run("snapshot", "--json", env=env, cwd=tmp_path)
    assert out.returncode == 2
    assert "PGTOP_HA_" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_version_and_help() -> None:
    assert _run("--version").stdout.startswith("pgtop-ha ")
    helptext = _run("--help").stdout
    for word in ("snapshot", "lab", "demo", "--read-only", "--operator", "--patroni"):
        assert word in helptext


def test_ssh_session_says_why_it_is_read_only() -> None:
    from pgtop_ha.cli import read_only_notice

    auto = load_settings(None, environ={})
    notice = read_only_notice(auto, {"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"})
    assert notice is not None
    assert "SSH" in notice
    assert "--operator" in notice
    assert read_only_notice(auto, {}) is None
    chosen = load_settings(None, {"read_only": True}, environ={})
    assert read_only_notice(chosen, {"SSH_CONNECTION": "x"}) is None
