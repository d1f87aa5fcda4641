"""The lab ignores the caller's PG*, PGTOP_HA_*, PATRONI_* and ETCD* environment, and its state
directory knows its ports: `lab status`, `down` and `fault` read them from there."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha.errors import ConfigError, UserError
from pgtop_ha.lab import configs, faults, poolers, procs, secrets
from pgtop_ha.lab.cli import demo_environ, drop_libpq_environ, lab_environ
from pgtop_ha.lab.cluster import MARKER, Lab, _port_free, claim_layout
from pgtop_ha.lab.configs import console_config
from pgtop_ha.lab.layout import MONITOR_USER, NODE_NAMES, Layout, saved_layout
from pgtop_ha.lab.poolers import parse_with
from pgtop_ha.settings import Settings, load_settings

# What a DBA's shell often holds, and worse: each one alone broke, or could break, a lab child.
HOSTILE = {
    "PGPASSWORD": "wrong",
    "PGUSER": "nobody",
    "PGDATABASE": "nowhere",
    "PGPORT": "1",
    "PGSSLMODE": "require",
    "PGSERVICE": "nosuch",
    "PGSERVICEFILE": "/nonexistent/pg_service.conf",
    "PGOPTIONS": "-c default_transaction_read_only=on",
    "PGDATA": "/nonexistent",
    "PGBACKREST_REPO1_PATH": "/nonexistent",
    "PGTOP_HA_READ_ONLY": "maybe",
    "PGTOP_HA_PATRONI_PASSWORD": "wrong",
    "PGTOP_HA_PG_USER": "nobody",
    "PATRONI_SCOPE": "elsewhere",
    "ETCD_NAME": "elsewhere",
}


def _pgtop(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgtop_ha", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **HOSTILE} if env is None else env,
    )


def _fake_lab(state: Path, base: int) -> Layout:
    """A state directory as `lab up` leaves it (marker and layout record), with nothing running."""
    layout = Layout(base_port=base, state_dir=state)
    state.mkdir(parents=True)
    (state / MARKER).touch()
    layout.layout_file.write_text(layout.record())
    return layout


# ----- without a lab ----------------------------------------------------------------------------
def test_a_suite_claiming_a_range_clears_the_lab_a_dead_suite_left() -> None:
    """A suite killed mid-run leaves its state directory; the next claim of that range removes it."""
    # A range no suite claims (theirs end below 30000), below the kernel's ephemeral ports, whose
    # ports are free now: the claim must be refused only for what it finds in the directory.
    base = next(
        (
            b
            for b in range(30000, 31400, 50)
            if not Path(f"/tmp/pgtop-ha-test-{b}").exists()
            and not Path(f"/tmp/pgtop-ha-port-{b}.claim").exists()
            and all(_port_free(p) for p in Layout(b, Path("/nonexistent")).ports())
        ),
        None,
    )
    if base is None:
        pytest.skip("no free port range between 30000 and 31400 here")
    lock = Path(f"/tmp/pgtop-ha-port-{base}.claim")
    stale = Path(f"/tmp/pgtop-ha-test-{base}")
    layout = _fake_lab(stale, base)
    (layout.data_dir(0)).mkdir(parents=True)
    (layout.data_dir(0) / "PG_VERSION").write_text("9\n")
    lock.write_text("999999999")  # a claim whose holder is gone
    try:
        claimed = claim_layout(None, start=base, stop=base + 50)
        assert claimed.state_dir == stale
        assert not stale.exists()
    finally:
        lock.unlink(missing_ok=True)
        shutil.rmtree(stale, ignore_errors=True)


def test_up_refuses_data_another_postgresql_major_made(tmp_path: Path) -> None:
    layout = _fake_lab(tmp_path / "lab", 34450)
    layout.data_dir(1).mkdir(parents=True)
    (layout.data_dir(1) / "PG_VERSION").write_text("9\n")
    with pytest.raises(UserError) as err:
        Lab(layout, out=io.StringIO()).up(rows=1)
    said = str(err.value)
    assert said.startswith(f"{NODE_NAMES[1]}'s data in {layout.state_dir} was made by PostgreSQL 9,")
    assert "pgtop-ha lab down" in said
    assert not (layout.state_dir / "etcd").exists()  # refused before anything started


def test_lab_env_keeps_only_what_no_lab_program_reads() -> None:
    caller = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": "/root", **HOSTILE, "PSQLRC": "/x"}
    caller |= {"PGSSLROOTCERT": "/x", "PGTOP_HA_PATRONI": "http://10.0.0.1:8008", "ETCDCTL_API": "2"}
    env = procs.lab_env({"PGPASSFILE": "/lab/pgpass"}, caller)
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "HOME": "/root", "PGPASSFILE": "/lab/pgpass"}


def test_a_lab_child_does_not_inherit_pgpassword(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in HOSTILE.items():
        monkeypatch.setenv(name, value)
    out = procs.run(["env"], run_as=procs.RunAs(), env={"PGPASSFILE": "/lab/pgpass"}).stdout
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert not names & set(HOSTILE)
    assert "PGPASSFILE=/lab/pgpass" in out.splitlines()
    assert "PATH" in names


def test_layout_record_round_trips(tmp_path: Path) -> None:
    layout = _fake_lab(tmp_path / "lab", 17400)
    doc = json.loads(layout.layout_file.read_text())
    assert doc["base_port"] == 17400
    assert doc["ports"]["node2_postgres"] == 17411 and doc["ports"]["haproxy_stats"] == 17432
    assert sorted(doc["ports"].values()) == sorted(layout.ports())
    assert saved_layout(layout.state_dir) == layout
    assert saved_layout(tmp_path / "none") is None


def test_a_layout_with_a_clusters_own_names_round_trips(tmp_path: Path) -> None:
    names = ("pg-prod-eu-central-1a-01", "pg-prod-eu-central-1b-02", "pg-prod-eu-central-1c-03")
    layout = Layout(17400, tmp_path / "lab", names=names, haproxy_servers="addresses")
    layout.state_dir.mkdir()
    layout.layout_file.write_text(layout.record())
    doc = json.loads(layout.layout_file.read_text())
    assert doc["names"] == list(names) and doc["haproxy_servers"] == "addresses"
    assert doc["ports"]["pg-prod-eu-central-1b-02_postgres"] == 17411
    assert layout.data_dir(2).name == "pg-prod-eu-central-1c-03"
    assert saved_layout(layout.state_dir) == layout
    cfg = configs.haproxy_cfg(layout)
    assert "server postgresql_127.0.0.1_17410 127.0.0.1:17410 check port 17420" in cfg
    assert "stats show-legends" in cfg and "server node1" not in cfg
    assert "stats show-legends" not in configs.haproxy_cfg(Layout(17400, tmp_path / "other"))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a", "give 2 to 7 names"),
        ("a,b,c,d,e,f,g,h", "give 2 to 7 names"),
        ("a,b,a", "each member needs its own name"),
        ("a,B,c", "'B' is not a usable member name"),
        ("a,b c,d", "'b c' is not a usable member name"),
        ("a,-b,c", "'-b' is not a usable member name"),
        ("a,$(reboot),c", "'$(reboot)' is not a usable member name"),
        ("a,subscriber,c", "'subscriber' is the lab's subscriber"),
    ],
)
def test_names_the_lab_cannot_use_are_one_line(tmp_path: Path, text: str, says: str) -> None:
    out = _pgtop("lab", "up", "--names", text, "--state-dir", str(tmp_path / "lab"))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr, out.stderr
    assert not (tmp_path / "lab").exists()  # refused before anything was made


def test_names_that_disagree_with_the_state_dir_are_one_line(tmp_path: Path) -> None:
    layout = _fake_lab(tmp_path / "lab", 17400)
    out = _pgtop("lab", "up", "--names", "a,b,c", "--state-dir", str(layout.state_dir))
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--names disagrees with the lab in" in out.stderr and "node1,node2,node3" in out.stderr
    out = _pgtop("lab", "up", "--haproxy-servers", "addresses", "--state-dir", str(layout.state_dir))
    assert out.returncode == 2 and "--haproxy-servers addresses disagrees" in out.stderr


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"base_port": "17400"}',
        '{"base_port": 17400, "ports": {}}',
        '{"base_port": 80}',
        '{"base_port": 17400, "ports": {}, "names": ["a", "b"]}',
        '{"base_port": 17400, "ports": {}, "names": "abc"}',
        '{"base_port": 17400, "ports": {}, "haproxy_servers": "x"}',
    ],
)
def test_a_damaged_layout_record_is_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / "layout.json").write_text(text)
    with pytest.raises(UserError) as err:
        saved_layout(tmp_path)
    assert "\n" not in str(err.value) and str(tmp_path / "layout.json") in str(err.value)


def test_status_reads_ports_from_the_state_dir_whatever_the_env(tmp_path: Path) -> None:
    # Nothing runs there: roles are null, but the ports are the recorded ones, not 25400's.
    layout = _fake_lab(tmp_path / "lab", 17400)
    out = _pgtop("lab", "status", "--json", "--state-dir", str(layout.state_dir))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["base_port"] == 17400
    assert [m["pg_port"] for m in doc["members"]] == [17410, 17411, 17412]
    assert [m["rest_port"] for m in doc["members"]] == [17420, 17421, 17422]
    assert doc["haproxy"]["writer_port"] == 17430


@pytest.mark.parametrize(
    "command", [["status", "--json"], ["down"], ["fault", "thaw", "node1"], ["up", "--rows", "10"]]
)
def test_a_base_port_that_disagrees_with_the_state_dir_is_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    layout = _fake_lab(tmp_path / "lab", 17400)
    out = _pgtop("lab", *command, "--base-port", "17450", "--state-dir", str(layout.state_dir))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert out.stderr.startswith("pgtop-ha: --base-port 17450 disagrees with the lab in ")
    assert "base port 17400" in out.stderr
    assert layout.layout_file.exists()  # `down` touched nothing


def test_the_same_base_port_as_the_state_dir_is_accepted(tmp_path: Path) -> None:
    layout = _fake_lab(tmp_path / "lab", 17400)
    out = _pgtop("lab", "status", "--json", "--base-port", "17400", "--state-dir", str(layout.state_dir))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["base_port"] == 17400


def test_lab_settings_see_only_pgtop_ha_lab_variables() -> None:
    env = lab_environ({**HOSTILE, "PGTOP_HA_LAB__BASE_PORT": "17400", "PATH": "/usr/bin"})
    assert env == {"PGTOP_HA_LAB__BASE_PORT": "17400"}
    assert load_settings(Path("/dev/null"), environ=env).lab.base_port == 17400


def test_demo_console_keeps_the_lab_targets_and_the_users_preferences(tmp_path: Path) -> None:
    layout = _fake_lab(tmp_path / "lab", 17400)
    layout.console_config.write_text(console_config(layout))
    caller = {
        "PGTOP_HA_PATRONI": "http://10.0.0.1:8008",
        "PGTOP_HA_PATRONI_URLS": "http://10.0.0.2:8008",
        "PGTOP_HA_PATRONI_PASSWORD": "wrong",
        "PGTOP_HA_PATRONI__ALLOWED_HOSTS": "10.0.0.0/8",
        "PGTOP_HA_PG_USER": "nobody",
        "PGTOP_HA_POSTGRES__PASSFILE": "/nonexistent",
        "PGTOP_HA_HAPROXY_URL": "http://10.0.0.3:7000/stats",
        "PGTOP_HA_CLUSTER_NAME": "prod",
        "PGTOP_HA_LAB__BASE_PORT": "25400",
        "PGTOP_HA_THEME": "light",
        "PGTOP_HA_INTERVAL": "2.5",
        "PGTOP_HA_READ_ONLY": "true",
    }
    settings = load_settings(layout.console_config, {}, environ=demo_environ(caller))
    assert settings.patroni.urls == tuple(layout.patroni_url(i) for i in range(len(NODE_NAMES)))
    assert settings.patroni_password is None
    assert settings.patroni.allowed_hosts in (None, ())
    assert settings.postgres.user == MONITOR_USER and settings.postgres.passfile == layout.pgpass
    assert settings.haproxy.url == layout.stats_url
    assert settings.cluster_name == "pgtop-lab" and settings.lab.base_port == 17400
    assert (settings.theme, settings.interval, settings.read_only) == ("light", 2.5, True)
    # The user's own read-only setting still fails closed on a typo.
    with pytest.raises(ConfigError, match="read_only"):
        load_settings(layout.console_config, {}, environ=demo_environ({"PGTOP_HA_READ_ONLY": "maybe"}))


def test_demo_drops_libpq_variables_only() -> None:
    environ = {**HOSTILE, "PATH": "/usr/bin"}
    drop_libpq_environ(environ)
    assert {k for k in environ if k.startswith("PG")} == {
        "PGTOP_HA_READ_ONLY",
        "PGTOP_HA_PATRONI_PASSWORD",
        "PGTOP_HA_PG_USER",
    }
    assert environ["PATH"] == "/usr/bin" and environ["PATRONI_SCOPE"] == "elsewhere"


# ----- a real lab, started from a hostile shell on its own port range ---------------------------
@dataclass(frozen=True)
class Started:
    """A lab started by `pgtop-ha lab up` with HOSTILE in its environment."""

    layout: Layout
    up: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def hostile_lab() -> Iterator[Started]:
    """A small lab on a non-default port range (away from the session lab's), torn down by PID."""
    layout = claim_layout(None, start=31400, stop=34000)
    up = _pgtop(
        "lab", "up", "--rows", "1000",
        "--base-port", str(layout.base_port), "--state-dir", str(layout.state_dir),
        timeout=400,
    )  # fmt: skip
    try:
        yield Started(layout, up)
    finally:
        if layout.state_dir.exists():
            Lab(layout, out=io.StringIO()).down()


@pytest.mark.lab
def test_lab_up_ignores_the_callers_pg_environment(
    hostile_lab: Started, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hostile_lab.up.returncode == 0, hostile_lab.up.stderr[-3000:]
    lab = Lab(hostile_lab.layout, out=io.StringIO())
    # Patroni may still restart a replica once for the permanent slot: healthy again soon after.
    assert procs.poll(lab.healthy, 120, interval=0.5)
    assert sorted(lab.status(), key=lambda m: m.name)[0].role in ("leader", "replica")
    for name in NODE_NAMES:
        pid = lab.book.running(f"patroni-{name}")
        assert pid is not None
        environ = dict(
            item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item
        )
        assert not set(environ) & set(HOSTILE), name
        assert environ["PGBACKREST_PG1_PORT"] == str(lab.layout.pg_port(NODE_NAMES.index(name)))
    # The lab's own psql, called from a process that has them too.
    for name, value in HOSTILE.items():
        monkeypatch.setenv(name, value)
    leader = lab.leader()
    assert leader is not None
    assert lab.psql("SELECT current_user || ' ' || current_database()", leader) == "postgres labdb"
    assert lab.psql("SHOW default_transaction_read_only", leader) == "off"


@pytest.mark.lab
def test_status_json_on_a_non_default_base_port(hostile_lab: Started) -> None:
    layout = hostile_lab.layout
    assert layout.base_port != 25400
    assert procs.poll(Lab(layout, out=io.StringIO()).healthy, 120, interval=0.5)
    # Patroni restarts each replica once, unasked, to create the permanent slot on it: a status
    # taken during that restart rightly shows no postmaster. Poll until the cluster has settled.
    seen: list[dict[str, Any]] = []

    def settled() -> bool:
        out = _pgtop("lab", "status", "--json", "--state-dir", str(layout.state_dir))
        assert out.returncode == 0, out.stderr
        seen.append(json.loads(out.stdout))
        return all(
            procs.alive(m["patroni_pid"]) and procs.alive(m["postmaster_pid"]) for m in seen[-1]["members"]
        ) and sorted(m["state"] for m in seen[-1]["members"]) == ["running", "streaming", "streaming"]

    assert procs.poll(settled, 120, interval=1.0), seen[-1] if seen else None
    doc = seen[-1]
    assert doc["base_port"] == layout.base_port
    members = {m["name"]: m for m in doc["members"]}
    for i, name in enumerate(NODE_NAMES):
        assert (members[name]["pg_port"], members[name]["rest_port"]) == (
            layout.pg_port(i),
            layout.rest_port(i),
        )
        assert procs.alive(members[name]["patroni_pid"]) and procs.alive(members[name]["postmaster_pid"])
    assert sorted(m["role"] for m in members.values()) == ["leader", "replica", "replica"]
    assert sorted(m["state"] for m in members.values()) == ["running", "streaming", "streaming"]
    assert doc["haproxy"]["writer_port"] == layout.writer_port


@pytest.mark.lab
def test_fault_reads_ports_from_the_state_dir(hostile_lab: Started) -> None:
    lab = Lab(hostile_lab.layout, out=io.StringIO())
    assert procs.poll(lab.healthy, 120, interval=0.5)
    before = lab.leader()
    out = _pgtop("lab", "fault", "switchover", "--state-dir", str(lab.layout.state_dir))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "switchover done" in out.stdout
    assert lab.leader() not in (None, before)


@pytest.mark.lab
def test_down_reads_the_state_dir(hostile_lab: Started) -> None:
    # Last in this module: the fixture's teardown only cleans up after a failure.
    lab = Lab(hostile_lab.layout, out=io.StringIO())
    pids = list(lab.running_pids().values()) + lab.stray_pids()
    assert len(pids) >= 5
    out = _pgtop("lab", "down", "--state-dir", str(lab.layout.state_dir), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [p for p in pids if procs.alive(p)] == []
    assert not lab.layout.state_dir.exists()


def test_a_layout_recorded_before_the_poolers_ports_still_reads(tmp_path: Path) -> None:
    layout = Layout(17400, tmp_path)
    old = {k: v for k, v in layout.port_map().items() if k not in ("pgbouncer", "pgpool", "pgpool_pcp")}
    (tmp_path / "layout.json").write_text(json.dumps({"base_port": 17400, "ports": old}))
    assert saved_layout(tmp_path) == layout
    # A record that names the poolers' ports must name them right.
    wrong = {**layout.port_map(), "pgbouncer": 6432}
    (tmp_path / "layout.json").write_text(json.dumps({"base_port": 17400, "ports": wrong}))
    with pytest.raises(UserError, match="lists ports"):
        saved_layout(tmp_path)


@pytest.mark.parametrize("text", ["pgbouncer,pgpool", "pgpool, pgbouncer,pgpool", ""])
def test_with_names_the_poolers(text: str) -> None:
    assert set(parse_with(text)) <= {"pgbouncer", "pgpool"}
    assert len(parse_with(text)) == len(set(parse_with(text)))


def test_with_an_unknown_pooler_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UserError, match=r"--with odyssey: unknown; choose from pgbouncer,pgpool"):
        parse_with("pgbouncer,odyssey")


def test_a_password_store_from_before_pcp_keeps_its_passwords(tmp_path: Path) -> None:
    layout = Layout(17400, tmp_path)
    layout.secrets_dir.mkdir(mode=0o700)
    old = {role: f"pw-{role}" for role in secrets.ROLES if role != secrets.PCP}
    (layout.secrets_dir / "passwords.json").write_text(json.dumps(old))
    passwords = secrets.ensure(layout)
    assert {r: passwords[r] for r in old} == old and passwords[secrets.PCP]
    assert secrets.ensure(layout) == passwords  # written back: stable from now on


def test_console_config_with_poolers_reads_them_and_probes_them(tmp_path: Path) -> None:
    layout = Layout(17400, tmp_path)
    path = tmp_path / "pgtop-ha.toml"
    path.write_text(console_config(layout, ("pgbouncer", "pgpool")))
    settings = load_settings(path, environ={})
    assert [(b.name, b.port) for b in settings.pgbouncer] == [("pgbouncer", 17433)]
    assert [(p.name, p.port) for p in settings.pgpool] == [("pgpool", 17434)]
    # Their client ports are probed by default, beside HAProxy's listed writer and reader ports.
    found = {(e.name, e.kind, e.port) for e in settings.probe_endpoints()}
    assert found == {
        ("writer", "writer", 17430),
        ("reader", "reader", 17431),
        ("pgbouncer", "pooler", 17433),
        ("pgpool", "pooler", 17434),
    }


def test_a_listed_pooler_endpoint_is_not_probed_twice() -> None:
    settings = Settings.model_validate(
        {
            "probes": {"endpoints": [{"name": "pgbouncer", "host": "db", "port": 6432, "kind": "pooler"}]},
            "pgbouncer": [{"name": "pgbouncer", "host": "db", "port": 6432}],
            "pgpool": [{"name": "pgbouncer", "host": "db", "port": 9999}],
        }
    )
    found = [(e.name, e.port) for e in settings.probe_endpoints()]
    assert found == [("pgbouncer", 6432), ("pgbouncer (client)", 9999)]


def test_pooler_configs_carry_the_ports_and_no_failover() -> None:
    layout = Layout(17400, Path("/tmp/x"))
    ini = poolers.pgbouncer_ini(layout)
    assert "listen_port = 17433" in ini and "port=17430" in ini and f"stats_users = {MONITOR_USER}" in ini
    conf = poolers.pgpool_conf(layout)
    assert "port = 17434" in conf and "pcp_port = 17435" in conf
    assert "failover_command = ''" in conf and "failover_on_backend_error = off" in conf
    script = poolers.role_change_script(layout)
    assert "pcp_promote_node" in script and "-p 17435" in script


def test_the_load_does_not_start_on_a_disk_below_its_floor(tmp_path: Path) -> None:
    # The lab keeps the load's WAL (its permanent slot on every node, pgBackRest's archive):
    # `fault load` stops before the disk is full, and does not start below the floor.
    lab = Lab(Layout(17400, tmp_path), out=io.StringIO())
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(UserError, match=r"no load started: the filesystem of .* GiB free .*lab down"):
        faults.load(lab, 5, floor=free + 2**40)
    assert faults.disk_left(tmp_path, floor=1) is None
    assert faults.disk_left(tmp_path / "not" / "made", floor=1) is None  # its filesystem, not an error
    assert not (lab.layout.run_dir / "bigtxn.sql").exists()  # nothing was set up
