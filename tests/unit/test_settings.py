"""Settings: file, env and CLI layers, and one clear line (exit 2) for each kind of bad config."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pgtop_ha.cli import cli_overrides
from pgtop_ha.errors import ConfigError
from pgtop_ha.settings import Settings, load_settings, resolve_mode


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


def test_no_postgres_from_the_flag_or_the_file_and_a_typo_is_an_error(tmp_path: Path) -> None:
    from pgtop_ha.cli import _parser

    args = _parser().parse_args(["--patroni", "http://127.0.0.1:8008", "--no-postgres", "check"])
    assert load_settings(None, cli_overrides(args), environ={}).postgres.enabled is False
    assert load_settings(None, environ={}).postgres.enabled is True
    cfg = tmp_path / "c.toml"
    cfg.write_text('[postgres]\nenabled = "nope"\n')
    with pytest.raises(ConfigError, match=r"enabled.*not a boolean"):
        load_settings(cfg, environ={})


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


def test_haproxy_stats_login_is_a_user_and_a_password_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    pw = tmp_path / "stats-pw"
    pw.write_text("st4ts\n")
    cfg.write_text(
        f'[haproxy]\nurl = "http://127.0.0.1:7000/stats"\nuser = "reader"\npassword_file = "{pw}"\n'
    )
    s = load_settings(cfg, environ={})
    login = s.haproxy_login()
    assert login is not None and login[0] == "reader" and login[1].get_secret_value() == "st4ts"
    assert "st4ts" not in repr(s) and "st4ts" not in s.model_dump_json()
    env = load_settings(
        None, environ={"PGTOP_HA_HAPROXY_USER": "reader", "PGTOP_HA_HAPROXY_PASSWORD_FILE": str(pw)}
    )
    assert env.haproxy_login() == login
    # Half a login is a typo, not a page read without one; a file that cannot serve is one line.
    cfg.write_text('[haproxy]\nuser = "reader"\n')
    with pytest.raises(ConfigError, match="user is set without password_file; set both"):
        load_settings(cfg, environ={})
    for text, said in (("", "is empty; write the stats page's password in it"), (None, "No such file")):
        missing = tmp_path / "absent"
        if text is not None:
            missing.write_text(text)
        cfg.write_text(f'[haproxy]\nuser = "reader"\npassword_file = "{missing}"\n')
        with pytest.raises(ConfigError, match=said):
            load_settings(cfg, environ={}).haproxy_login()
        missing.unlink(missing_ok=True)


SSH = {"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"}


def _ro(settings: Settings, environ: dict[str, str]) -> bool:
    return resolve_mode(settings, environ).read_only


def test_read_only_auto_in_ssh() -> None:
    s = load_settings(None, environ={})
    assert _ro(s, SSH) is True
    assert _ro(s, {}) is False
    operator = load_settings(None, {"read_only": False}, environ={})
    assert _ro(operator, SSH) is False
    env_ro = load_settings(None, environ={"PGTOP_HA_READ_ONLY": "1"})
    assert _ro(env_ro, {}) is True


@pytest.mark.parametrize("value", ["y", "ture", "maybe", "2", "enabled", "tru e"])
def test_read_only_typo_is_an_error(value: str) -> None:
    with pytest.raises(ConfigError, match=r"read_only.*not a boolean"):
        load_settings(None, environ={"PGTOP_HA_READ_ONLY": value})


@pytest.mark.parametrize(
    ("value", "expect"), [("1", True), ("ON", True), ("Yes", True), ("off", False), ("0", False)]
)
def test_read_only_usual_spellings(value: str, expect: bool) -> None:
    assert load_settings(None, environ={"PGTOP_HA_READ_ONLY": value}).read_only is expect


def test_empty_env_means_unset_and_ssh_stays_read_only() -> None:
    s = load_settings(None, environ={"PGTOP_HA_READ_ONLY": "  "})
    assert s.read_only is None
    assert _ro(s, SSH) is True


def test_env_false_does_not_open_an_ssh_session() -> None:
    s = load_settings(None, environ={"PGTOP_HA_READ_ONLY": "false"})
    mode = resolve_mode(s, SSH)
    assert mode.read_only is True
    assert "--operator" in mode.reason
    assert _ro(s, {}) is False  # outside SSH an explicit false is honoured


def test_only_operator_flag_or_config_file_open_ssh(tmp_path: Path) -> None:
    flag = load_settings(None, {"read_only": False}, environ={"PGTOP_HA_READ_ONLY": "true"})
    assert resolve_mode(flag, SSH) == resolve_mode(flag, SSH)
    assert resolve_mode(flag, SSH).read_only is False
    assert "--operator" in resolve_mode(flag, SSH).reason
    cfg = tmp_path / "c.toml"
    cfg.write_text("read_only = false\n")
    from_file = load_settings(cfg, environ={})
    mode = resolve_mode(from_file, SSH)
    assert mode.read_only is False
    assert str(cfg) in mode.reason


def test_config_in_current_directory_is_ignored(tmp_path: Path) -> None:
    import os

    (tmp_path / "pgtop-ha.toml").write_text('read_only = false\naudit_log = "/tmp/evil.log"\n')
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "SSH_CONNECTION": SSH["SSH_CONNECTION"],
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
    }
    code = (
        "from pgtop_ha.settings import load_settings, resolve_mode; import os;"
        "s = load_settings(); print(s.audit_log, resolve_mode(s, os.environ).read_only)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert out.stdout.split() == ["None", "True"], out.stderr


def test_config_that_is_not_a_file_is_one_line() -> None:
    out = _run("--config", "/dev/zero", "snapshot", "--json")
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "/dev/zero" in out.stderr


def test_password_in_url_is_redacted_in_config_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[patroni]\nurls = ["http://admin:s3cret@10.0.0.1:8008/api/x"]\n')
    with pytest.raises(ConfigError) as err:
        load_settings(cfg, environ={})
    assert "s3cret" not in str(err.value)
    assert "***" in str(err.value)


@pytest.mark.parametrize(
    ("given", "expect"),
    [
        ("http://127.0.0.1:8008", "http://127.0.0.1:8008"),
        ("http://127.0.0.1:8008/", "http://127.0.0.1:8008"),
        ("http://127.0.0.1:8008/patroni", "http://127.0.0.1:8008"),
        ("HTTPS://db1:8008/patroni/", "https://db1:8008"),
    ],
)
def test_patroni_urls_are_normalised(given: str, expect: str) -> None:
    assert load_settings(None, {"patroni": {"urls": [given]}}, environ={}).patroni.urls == (expect,)


@pytest.mark.parametrize(
    "given", ["http://h:8008/cluster", "http://h:8008/?x=/patroni", "ftp://h:8008", "h:8008"]
)
def test_patroni_urls_refused(given: str) -> None:
    with pytest.raises(ConfigError, match=r"patroni.urls"):
        load_settings(None, {"patroni": {"urls": [given]}}, environ={})


@pytest.mark.parametrize(
    ("given", "expect"),
    [
        ("http://127.0.0.1:7000", "http://127.0.0.1:7000/;csv"),
        ("http://127.0.0.1:7000/", "http://127.0.0.1:7000/;csv"),
        ("http://127.0.0.1:7000/stats", "http://127.0.0.1:7000/stats;csv"),
        ("http://127.0.0.1:7000/stats;csv", "http://127.0.0.1:7000/stats;csv"),
    ],
)
def test_haproxy_url_as_users_type_it(given: str, expect: str) -> None:
    import argparse

    from pgtop_ha.models.urls import csv_url

    s = load_settings(None, cli_overrides(argparse.Namespace(haproxy=given)), environ={})
    assert s.haproxy.url is not None
    assert csv_url(s.haproxy.url) == expect


def test_haproxy_other_scheme_is_refused_not_a_socket() -> None:
    import argparse

    with pytest.raises(ConfigError, match=r"haproxy.url.*only http and https"):
        load_settings(None, cli_overrides(argparse.Namespace(haproxy="ftp://x")), environ={})


@pytest.mark.parametrize("bad", ["10.0.0.0/33", "not a host", "", "10.0.0.300"])
def test_allowed_hosts_typos_are_errors(bad: str) -> None:
    with pytest.raises(ConfigError, match="allowed_hosts"):
        load_settings(None, {"postgres": {"allowed_hosts": [bad]}}, environ={})


def test_bool_settings_are_strict(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[patroni]\nverify = "nope"\n')
    with pytest.raises(ConfigError, match=r"patroni.verify"):
        load_settings(cfg, environ={})
    with pytest.raises(ConfigError, match="allow_cleartext_password"):
        load_settings(None, environ={"PGTOP_HA_POSTGRES__ALLOW_CLEARTEXT_PASSWORD": "sure"})


@pytest.mark.parametrize(
    "theme",
    [
        '[colors]\nprimary = "notacolour"\n',
        '[colors]\nprimary = "#ff0000"\nvariables = 3\n',
        '[colors]\nprimary = "#ff0000"\nlevels = "bold"\n',
        "[colors\n",
        '[colors]\nprimary = "#ff0000"\n' + "x" * 300_000,
    ],
)
def test_bad_theme_is_one_line(tmp_path: Path, theme: str) -> None:
    from pgtop_ha.ui.themes import load_theme

    path = tmp_path / "bad.toml"
    path.write_text(theme)
    with pytest.raises(ConfigError) as err:
        load_theme(str(path))
    assert "\n" not in str(err.value)
    assert str(path) in str(err.value)


BAD_CASES = [
    ("missing file", None, "not found"),
    ("bad toml", "interval = = 1\n", "not valid TOML"),
    ("unknown key", "intervall = 1\n", "unknown key 'intervall'"),
    ("unknown nested key", "[postgres]\nusr = 'x'\n", "unknown key 'postgres.usr'"),
    ("wrong type", "interval = 'fast'\n", "interval"),
    ("bad url", "[patroni]\nurls = ['ftp://x:8008']\n", "patroni.urls: 'ftp://x:8008' has scheme 'ftp'"),
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
    auto = load_settings(None, environ={})
    mode = resolve_mode(auto, SSH)
    assert mode.read_only
    assert "SSH" in mode.reason
    assert "--operator" in mode.reason
    assert mode.short == "SSH"
    chosen = load_settings(None, {"read_only": True}, environ={})
    assert resolve_mode(chosen, SSH).reason == "read-only: set by --read-only"


def test_thresholds_are_bands_and_the_older_flat_keys_still_read(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[thresholds]\nlag_bytes = { warn = 1, crit = 2 }\narchive_ready_crit = 500\n")
    t = load_settings(cfg, environ={}).thresholds
    assert (t.lag_bytes.warn, t.lag_bytes.crit) == (1, 2)
    assert (t.archive_ready.warn, t.archive_ready.crit) == (10, 500)  # the warn part keeps its default
    assert t.stale_s.grade(6.0) == 1 and t.stale_s.grade(None) == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("lag_s = { warn = 60, crit = 10 }", r"thresholds.*lag_s.*warn \(60\) must not exceed crit \(10\)"),
        ("lag_s = { warn = 1, crit = 2 }\nlag_warn_s = 3", r"lag_s is given twice"),
        ("lag_s = { warn = 1, crit = 2, critical = 3 }", r"thresholds.*lag_s.*critical"),
        ("lag_warn_parsecs = 3", r"thresholds.*lag_warn_parsecs"),
    ],
)
def test_a_bad_band_is_one_line_naming_it(tmp_path: Path, body: str, message: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[thresholds]\n{body}\n")
    with pytest.raises(ConfigError, match=message) as err:
        load_settings(cfg, environ={})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ('interval = "1"\n', "interval = '1' is text"),
        ('[patroni]\ntimeout = "2"\n', "patroni.timeout = '2' is text"),
        ('[thresholds.lag_bytes]\nwarn = "5"\ncrit = 10\n', "thresholds.lag_bytes.warn = '5' is text"),
    ],
)
def test_a_string_where_a_number_belongs_is_an_error(tmp_path: Path, toml: str, named: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=re.escape(named)):
        load_settings(path, environ={})


def test_a_special_file_is_refused_as_config_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "cfg"
    os.mkfifo(fifo)  # nobody writes: reading it would block for ever
    with pytest.raises(ConfigError, match="is no regular file"):
        load_settings(fifo, environ={})
    with pytest.raises(ConfigError, match="is no regular file"):
        load_settings(Path("/dev/zero"), environ={})
    assert load_settings(Path("/dev/null"), environ={}).interval == 1.0  # the usual "no config"


def test_the_environment_still_gives_numbers_as_text(tmp_path: Path) -> None:
    assert load_settings(None, environ={"PGTOP_HA_INTERVAL": "2"}).interval == 2.0
