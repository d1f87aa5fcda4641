"""The lab against itself: up gives one leader and two streaming replicas; each fault does what
it says (checked with SQL and Patroni's REST API); down leaves no process."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults, procs
from pgtop_ha.lab.cluster import Lab, claim_layout
from pgtop_ha.lab.layout import NODE_NAMES, PERMANENT_SLOT, saved_layout
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings, load_settings
from pgtop_ha.ui.widgets.heartbeat import heartbeat_text
from tests.support.lab_polls import quiet

pytestmark = pytest.mark.lab


def _members(lab: Lab) -> dict[str, dict[str, object]]:
    return {m["name"]: m for m in (lab.cluster() or {}).get("members", [])}


def _replicas(lab: Lab) -> list[str]:
    leader = lab.leader()
    return [n for n in NODE_NAMES if n != leader]


def test_up_gives_one_leader_two_streaming_replicas(lab: Lab) -> None:
    members = _members(lab)
    roles = sorted(str(m["role"]) for m in members.values())
    assert roles == ["leader", "replica", "replica"]
    leader = lab.leader()
    assert leader is not None
    assert lab.psql("SELECT pg_is_in_recovery()", leader) == "f"
    for name in _replicas(lab):
        assert members[name]["state"] == "streaming"
        assert lab.psql("SELECT pg_is_in_recovery()", name) == "t"
    senders = lab.psql("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", leader)
    assert senders == "2"


def test_status_json_names_roles_ports_and_pids(lab: Lab) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "lab", "status", "--json",
         "--base-port", str(lab.layout.base_port), "--state-dir", str(lab.layout.state_dir)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    members = {m["name"]: m for m in doc["members"]}
    assert set(members) == set(NODE_NAMES)
    assert sum(m["role"] == "leader" for m in members.values()) == 1
    for i, name in enumerate(NODE_NAMES):
        assert members[name]["pg_port"] == lab.layout.pg_port(i)
        assert procs.alive(members[name]["patroni_pid"])
        assert procs.alive(members[name]["postmaster_pid"])
    assert procs.alive(doc["processes"]["etcd"]) and procs.alive(doc["processes"]["haproxy"])


def test_lab_setup_roles_slots_archiving(lab: Lab) -> None:
    leader = lab.leader()
    assert leader is not None
    # SCRAM, a pg_monitor-only role, logical WAL, the permanent slot on every member.
    assert lab.psql("SHOW password_encryption", leader) == "scram-sha-256"
    assert lab.psql("SHOW wal_level", leader) == "logical"
    assert lab.psql("SHOW hot_standby_feedback", leader) == "on"
    assert (
        lab.psql(
            "SELECT pg_has_role('pgtop_monitor', 'pg_monitor', 'MEMBER') "
            "AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = 'pgtop_monitor')",
            leader,
        )
        == "t"
    )
    for name in NODE_NAMES:
        assert (
            lab.psql(
                f"SELECT slot_type FROM pg_replication_slots WHERE slot_name = '{PERMANENT_SLOT}'",
                name,
            )
            == "logical"
        ), name
    assert "pgbackrest" in lab.psql("SHOW archive_command", leader)
    assert lab.psql("SELECT count(*) > 0 FROM pg_publication WHERE pubname = 'lab_pub'", leader) == "t"


def test_rest_api_refuses_writes_without_credentials(lab: Lab) -> None:
    url = lab.layout.patroni_url(0)
    resp = httpx.post(f"{url}/switchover", json={"leader": lab.leader()}, timeout=10)
    assert resp.status_code == 401
    assert lab.leader() is not None


def test_up_is_idempotent(lab: Lab) -> None:
    before = lab.running_pids()
    quiet(lab).up()
    assert lab.running_pids() == before


def test_up_refuses_a_private_state_dir(tmp_path: Path) -> None:
    # pytest's tmp_path lies under a 0700 directory of root's: the lab user cannot enter it.
    if os.geteuid() != 0:
        pytest.skip("only root switches to the lab user")
    layout = claim_layout(tmp_path / "private")
    out = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "lab", "up",
         "--base-port", str(layout.base_port), "--state-dir", str(layout.state_dir)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("pgtop-ha: user pgtopha cannot reach")
    assert "--state-dir" in out.stderr


def test_up_refuses_a_taken_port(tmp_path: Path, lab: Lab) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pgtop_ha", "lab", "up",
         "--base-port", str(lab.layout.base_port), "--state-dir", str(tmp_path / "other")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert "already in use" in out.stderr and "--base-port" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("pgtop-ha: port ")


def test_kill_primary_kills_the_postmaster_and_patroni_recovers(lab: Lab) -> None:
    leader = lab.leader()
    assert leader is not None
    i = lab.index(leader)
    old = procs.postmaster_pid(lab.layout.data_dir(i))
    assert old is not None
    faults.kill_primary(quiet(lab))
    assert procs.wait_gone([old], deadline_in(10)) == []
    # Patroni restarts PostgreSQL (in place, or after a failover): a new postmaster appears.
    assert procs.poll(lambda: lab.healthy(), 120, interval=0.5)
    assert procs.postmaster_pid(lab.layout.data_dir(i)) not in (None, old)


def deadline_in(seconds: float) -> float:
    """A monotonic deadline ``seconds`` from now."""
    return time.monotonic() + seconds


def test_crash_then_start_patroni(lab: Lab) -> None:
    node = _replicas(lab)[0]
    i = lab.index(node)
    faults.crash(quiet(lab), node)
    assert lab.book.running(f"patroni-{node}") is None
    assert procs.postmaster_pid(lab.layout.data_dir(i)) is None
    assert lab.own_state(node) is None
    faults.start_patroni(quiet(lab), node)
    assert lab.own_state(node) == "running"
    assert procs.poll(lambda: lab.healthy(), 120, interval=0.5)


def test_stop_patroni_on_leader_hands_over(lab: Lab) -> None:
    leader = lab.leader()
    assert leader is not None
    faults.stop_patroni(quiet(lab), leader)
    assert procs.poll(lambda: lab.leader() not in (None, leader), 60, interval=0.5)
    assert procs.postmaster_pid(lab.layout.data_dir(lab.index(leader))) is None
    faults.start_patroni(quiet(lab), leader)
    assert procs.poll(lambda: lab.healthy(), 120, interval=0.5)


def _stopped(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_STOPPED)
    except psutil.NoSuchProcess:
        return False


def test_freeze_and_thaw(lab: Lab) -> None:
    node = _replicas(lab)[0]
    faults.freeze(quiet(lab), node)
    try:
        pid = lab.book.running(f"patroni-{node}")
        assert pid is not None
        # SIGSTOP is delivered asynchronously: a process running on the other core reports R
        # until it is next scheduled, so wait for the stopped state rather than read it once.
        assert procs.poll(lambda: _stopped(pid), 10, interval=0.05)
        assert lab.own_state(node, timeout=1) is None
    finally:
        faults.thaw(quiet(lab), node)
    assert procs.poll(lambda: lab.healthy(), 60, interval=0.5)


def test_break_and_fix_archive(lab: Lab) -> None:
    leader = lab.leader()
    assert leader is not None
    failed = int(lab.psql("SELECT failed_count FROM pg_stat_archiver", leader))
    faults.break_archive(quiet(lab))
    try:
        lab.psql("SELECT pg_switch_wal()", leader)

        def failing() -> bool:
            lab.psql("CREATE TEMP TABLE t AS SELECT 1; SELECT pg_switch_wal()", leader)
            return int(lab.psql("SELECT failed_count FROM pg_stat_archiver", leader)) > failed

        assert procs.poll(failing, 60, interval=1)
        ready = lab.psql("SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready'", leader)
        assert int(ready) > 0
    finally:
        faults.fix_archive(quiet(lab))
    archived = int(lab.psql("SELECT archived_count FROM pg_stat_archiver", leader))

    def archiving() -> bool:
        lab.psql("SELECT pg_switch_wal()", leader)
        return int(lab.psql("SELECT archived_count FROM pg_stat_archiver", leader)) > archived

    # PostgreSQL waits up to a minute between retries after three failures in a row.
    assert procs.poll(archiving, 120, interval=2)


def test_switchover_to_a_named_node(lab: Lab) -> None:
    target = _replicas(lab)[-1]
    faults.switchover(quiet(lab), to=target)
    assert lab.leader() == target
    assert lab.psql("SELECT pg_is_in_recovery()", target) == "f"


def test_load_runs_pgbench_through_the_writer(lab: Lab) -> None:
    leader = lab.leader()
    assert leader is not None
    before = int(lab.psql("SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables", leader))
    message = faults.load(quiet(lab), 3)
    assert "pgbench ran 3s" in message
    # What the load leaves behind is said: the permanent slot keeps its WAL on every member.
    assert re.search(
        r"the permanent slot lab_sub now retains \d+ (bytes|[kMGT]B) of WAL on each member", message
    ), message
    after = int(
        lab.psql("SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables", lab.leader() or leader)
    )
    assert after > before


def test_a_lab_with_a_clusters_own_names_then_down_leaves_no_process(lab: Lab) -> None:
    # A second, small lab of its own (the session's lab stays up for the other tests), shaped as
    # a cluster we have not seen: five members (two data centres and a witness) named as hosts
    # are, HAProxy's servers named as Patroni's example haproxy.cfg names them.
    layout = claim_layout(None)
    base, state = layout.base_port, layout.state_dir
    names = tuple(f"pg-prod-eu-central-1{z}-0{i}" for i, z in enumerate("aabbc", start=1))
    args = ["--base-port", str(base), "--state-dir", str(state)]
    down = [sys.executable, "-m", "pgtop_ha", "lab", "down", *args]
    try:
        up = subprocess.run(
            [sys.executable, "-m", "pgtop_ha", "lab", "up", "--rows", "1000", *args,
             "--names", ",".join(names), "--haproxy-servers", "addresses"],
            capture_output=True, text=True, timeout=400, env={**os.environ},
        )  # fmt: skip
        assert up.returncode == 0, up.stderr[-2000:]
        second = Lab(saved_layout(state) or layout, out=io.StringIO())
        assert second.layout.names == names
        assert sorted(_members(second)) == sorted(names)
        settings = load_settings(second.layout.console_config, environ={})
        snap = asyncio.run(_one_snapshot(settings))
        example = {f"postgresql_127.0.0.1_{base + 10 + i}" for i in range(5)}  # Patroni's example's names
        assert {s.server for s in snap.haproxy.servers} == example
        assert {s.member for s in snap.haproxy.servers} == set(names)  # joined by the address HAProxy shows
        # The header of that live snapshot at 80 columns, mid-incident cadence: nothing cut off.
        header = heartbeat_text(
            snapshot=snap, now=snap.taken_at, thresholds=settings.thresholds, read_only=True, paused=False,
            interval=1.0, node_filter="", note="", styles={}, cadence=0.25, width=80,
        ).plain  # fmt: skip
        assert len(header) <= 80 and "0.25s" in header and "fast" in header and "all 5 ✔" in header, header
        pids = list(second.running_pids().values()) + second.stray_pids()
        assert len(pids) >= 5
        stopped = subprocess.run(down, capture_output=True, text=True, timeout=300)
        assert stopped.returncode == 0, stopped.stderr[-2000:]
        assert [p for p in pids if procs.alive(p)] == []
        assert not state.exists()
    finally:
        if state.exists():  # a failed check above: the second lab must not outlive the test
            subprocess.run(down, capture_output=True, timeout=300, check=False)


async def _one_snapshot(settings: Settings) -> ClusterSnapshot:
    """A poller's snapshot once every member streams or leads and HAProxy has a writer UP."""
    poller = Poller.from_settings(settings)
    try:
        deadline = time.monotonic() + 60
        while True:
            snap = await poller.cycle(budget=2.0)
            writer = any(s.proxy == "pg_writer" and s.status == "UP" for s in snap.haproxy.servers)
            # Listed by /cluster, not only named by a configured URL (a member still starting is
            # shown that way), each running or streaming, each PostgreSQL read.
            listed = [m for m in snap.members if not m.unlisted and m.state in ("running", "streaming")]
            read = all(n.last_ok_at is not None for n in snap.nodes)
            if (writer and read and len(listed) == len(settings.patroni.urls)) or time.monotonic() > deadline:
                return snap
            await asyncio.sleep(0.5)  # pacing between polls, not synchronisation
    finally:
        await poller.aclose()
