"""Collectors against the real lab: Patroni, PostgreSQL, HAProxy and /proc agree with the truth."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from pgtop_ha.clock import system_clock
from pgtop_ha.collect import haproxy
from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.collect.pgquery import PROBE_SQL, Capabilities, build_query
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.lab import faults, subscriber
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import COPY_TABLE, DBNAME, NODE_NAMES, PERMANENT_SLOT, SUPERUSER
from pgtop_ha.models import derive
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from tests.support.lab_polls import quiet, until_seen

pytestmark = pytest.mark.lab


def as_superuser(settings: Settings) -> Settings:
    """The lab's console settings, reading as the superuser instead of pgtop_monitor."""
    postgres = settings.postgres.model_copy(update={"user": SUPERUSER})
    return settings.model_copy(update={"postgres": postgres})


@pytest.fixture
async def poller(lab_settings: Settings) -> AsyncIterator[Poller]:
    p = Poller.from_settings(lab_settings)
    try:
        yield p
    finally:
        await p.aclose()


def leader_node(snap: ClusterSnapshot) -> str:
    assert snap.cluster.leader is not None, snap.errors
    return snap.cluster.leader


async def test_leader_and_roles_agree_with_patroni(lab: Lab, poller: Poller) -> None:
    snap = await poller.cycle()
    patroni = lab.cluster() or {}
    roles = {m["name"]: m["role"] for m in patroni["members"]}
    assert snap.cluster.leader == next(n for n, r in roles.items() if r == "leader")
    assert snap.cluster.name == "pgtop-lab"
    assert {m.name: m.role for m in snap.members} == roles
    for member in snap.members:
        assert member.reachable, member.error
        assert member.own_role == ("primary" if roles[member.name] == "leader" else "replica")
        node = snap.node(member.name)
        assert node is not None and node.error is None, node
        assert node.in_recovery is (roles[member.name] != "leader")
        assert node.timeline == member.timeline
    assert snap.patroni_config is not None
    assert PERMANENT_SLOT in snap.patroni_config.permanent_slots
    # /history lists the timelines before the current one (none on a fresh cluster).
    current = max(m.timeline or 0 for m in snap.members)
    assert snap.history is not None, "the first snapshot carries /history"
    assert len(snap.history) == current - 1
    assert all(h.timeline < current for h in snap.history)


async def test_switchover_names_the_new_leader_next_cycle(lab: Lab, lab_settings: Settings) -> None:
    # /cluster on a calm minute (asked every 60 s while calm): the demotion that PostgreSQL shows
    # makes the very next cycle ask it, so the new leader is not a calm interval late.
    patroni = lab_settings.patroni.model_copy(update={"calm_interval": 60.0})
    poller = Poller.from_settings(lab_settings.model_copy(update={"patroni": patroni}))
    try:
        before = await poller.cycle()
        old = leader_node(before)
        faults.switchover(quiet(lab))  # returns once /cluster names a new leader
        new = lab.leader()
        assert new is not None and new != old
        snap = await poller.cycle()
        assert snap.cluster.leader == new
        # PostgreSQL's own view follows as soon as the promotion is done.
        snap = await until_seen(
            poller,
            lambda s: (n := s.node(new)) is not None and n.in_recovery is False,
            30,
            f"{new} out of recovery",
        )
        assert snap.node(new) is not None
    finally:
        await poller.aclose()


async def test_replication_rows_for_both_standbys(lab: Lab, poller: Poller) -> None:
    snap = await poller.cycle()
    leader = leader_node(snap)
    standbys = {n for n in NODE_NAMES if n != leader}
    node = snap.node(leader)
    assert node is not None and node.error is None
    rows = {r.application_name: r for r in node.replication}
    assert standbys <= set(rows)
    for name in standbys:
        row = rows[name]
        assert row.state == "streaming"
        assert row.sync_state in ("async", "sync", "quorum", "potential")
        assert row.replay_lag_bytes is not None
        assert 0 <= row.replay_lag_bytes < 64 * 1024**2
        assert row.sent_lag_bytes is not None and row.sent_lag_bytes <= row.replay_lag_bytes
        standby = snap.node(name)
        assert standby is not None and standby.wal_receiver is not None
        assert standby.wal_receiver.status == "streaming"


async def test_permanent_slot_on_every_member(lab: Lab, poller: Poller) -> None:
    # Patroni creates the permanent slot on replicas after restarting them once: allow time.
    snap = await until_seen(
        poller,
        lambda s: all(
            v is True for v in derive.slot_presence(s, (PERMANENT_SLOT,)).present[PERMANENT_SLOT].values()
        ),
        120,
        f"slot {PERMANENT_SLOT} on every member",
    )
    matrix = derive.slot_presence(snap)
    assert PERMANENT_SLOT in matrix.slots
    assert set(matrix.members) == set(NODE_NAMES)
    for node in snap.nodes:
        slot = next(s for s in node.slots if s.slot_name == PERMANENT_SLOT)
        assert slot.slot_type == "logical"
        assert slot.retained_bytes is not None and slot.retained_bytes >= 0


async def test_broken_archive_queues_and_fails(lab: Lab, poller: Poller) -> None:
    snap = await poller.cycle()
    leader = leader_node(snap)
    node = snap.node(leader)
    assert node is not None and node.archiver is not None
    failed_before = node.archiver.failed_count or 0

    def switch_wal() -> None:
        # A new segment ready wakes the archiver: after three failures it would sleep a minute.
        lab.psql("SELECT pg_logical_emit_message(false, 'pgtop', 'x'); SELECT pg_switch_wal()", node=leader)

    try:
        faults.break_archive(quiet(lab))
        for _ in range(3):
            switch_wal()

        def broken(s: ClusterSnapshot) -> bool:
            n = s.node(leader)
            a = n.archiver if n else None
            return (
                a is not None
                and (a.ready_count or 0) > 0
                and (a.failed_count or 0) > failed_before
                and s.cluster.leader == leader
            )

        snap = await until_seen(poller, broken, 120, "ready files and failed archiving")
        node = snap.node(leader)
        assert node is not None and node.archiver is not None
        assert node.archiver.last_failed_wal is not None
        assert node.archiver.segments_behind is not None and node.archiver.segments_behind >= 1
        first_failed = node.archiver.failed_count or 0
        switch_wal()
        snap = await until_seen(
            poller,
            lambda s: (
                (n := s.node(leader)) is not None
                and n.archiver is not None
                and (n.archiver.failed_count or 0) > first_failed
            ),
            120,
            "failed_count rising",
        )
    finally:
        faults.fix_archive(quiet(lab))
    woken = 0.0

    def wake(_: ClusterSnapshot) -> None:
        # An archiver that failed three times again sleeps a minute: a new segment wakes it.
        nonlocal woken
        if time.monotonic() - woken >= 5:
            woken = time.monotonic()
            switch_wal()

    await until_seen(
        poller,
        lambda s: (
            (n := s.node(leader)) is not None and n.archiver is not None and n.archiver.ready_count == 0
        ),
        120,
        "archive queue drained after fix-archive",
        each=wake,
    )


async def test_copy_rows_while_subscriber_syncs(lab: Lab, poller: Poller) -> None:
    try:
        subscriber.up(quiet(lab))

        def copying(s: ClusterSnapshot) -> bool:
            return any(
                c.relation is not None and COPY_TABLE in c.relation for n in s.nodes for c in n.copy_progress
            )

        snap = await until_seen(poller, copying, 90, f"COPY of {COPY_TABLE}")
        rows = [c for n in snap.nodes for c in n.copy_progress if c.relation]
        row = rows[0]
        assert row.command is not None and row.command.startswith("COPY")
        assert row.tuples_processed is not None
        assert row.bytes_processed is not None
        later = await until_seen(
            poller,
            lambda s: any(
                c.pid == row.pid and (c.bytes_processed or 0) > (row.bytes_processed or 0)
                for n in s.nodes
                for c in n.copy_progress
            ),
            60,
            "COPY progressing",
        )
        again = next(c for n in later.nodes for c in n.copy_progress if c.pid == row.pid)
        assert again.percent is not None and 0 <= again.percent <= 100
        rates = derive.copy_rates(snap, later)
        assert any(r.bytes_s for r in rates.values())
    finally:
        subscriber.down(quiet(lab))


async def test_process_memory_and_one_round_trip(lab: Lab, poller: Poller) -> None:
    snap = await poller.cycle()
    for node in snap.nodes:
        assert node.error is None, node.error
        assert node.memory_source == "local /proc"
        with_pss = [p for p in node.processes if p.pss_bytes and p.pss_bytes > 0]
        assert len(with_pss) >= 3, node.name
        assert any(p.backend_type == "postmaster" for p in with_pss)
        assert all(p.uss_bytes is not None and p.uss_bytes <= (p.rss_bytes or 0) for p in with_pss)
        assert any(p.application_name == "pgtop-ha" for p in node.processes)
    start = poller.round_trips()
    cycles = [await poller.cycle() for _ in range(3)]
    after = poller.round_trips()
    assert {n: after[n] - start[n] for n in after} == {n: 3 for n in NODE_NAMES}
    # Listed as before with the same reading: the very Process of the last cycle, not a copy
    # (an auxiliary process's pg_stat_activity row rarely moves within a second).
    last = {(n.name, p.pid): p for n in cycles[-2].nodes for p in n.processes}
    kept = [p for n in cycles[-1].nodes for p in n.processes if last.get((n.name, p.pid)) is p]
    assert any(p.pss_bytes for p in kept)
    assert any(p.backend_type == "postmaster" for p in kept)  # its reading is the same too
    # A document answered again word for word is not parsed again: its models are last cycle's.
    assert any(
        n.archiver is not None and n.archiver is before.archiver
        for older, newer in itertools.pairwise(cycles)
        for n in newer.nodes
        if (before := older.node(n.name)) is not None
    )


async def test_pg_monitor_only_has_no_node_error(lab: Lab, lab_settings: Settings) -> None:
    assert lab_settings.postgres.user == "pgtop_monitor"
    p = Poller.from_settings(lab_settings)
    try:
        snap = await p.cycle()
    finally:
        await p.aclose()
    assert len(snap.nodes) == len(NODE_NAMES)
    for node in snap.nodes:
        assert node.error is None, node.error
        assert node.reachable
        assert node.is_superuser is False
        for section in ("replication", "processes", "archiver.ready_count", "processes.memory"):
            assert section not in node.unavailable, (node.name, node.unavailable)
        assert node.archiver is not None and node.archiver.ready_count is not None
    assert snap.haproxy.error is None
    assert {s.proxy for s in snap.haproxy.servers} >= {"pg_writer", "pg_reader"}


async def test_remote_memory_needs_a_grant(lab: Lab, lab_settings: Settings) -> None:
    """Treated as remote, pg_monitor gets a reason and the superuser gets pg_read_file numbers."""
    i = lab.leader_index()
    target = Target(name=NODE_NAMES[i], host="127.0.0.1", port=lab.layout.pg_port(i), dbname=DBNAME)
    monitor = NodeReader(target, lab_settings.postgres, system_clock, local=False)
    superuser = NodeReader(target, as_superuser(lab_settings).postgres, system_clock, local=False)
    try:
        await asyncio.gather(monitor.start(), superuser.start())
        m, s = monitor.view(), superuser.view()
    finally:
        await monitor.aclose()
        await superuser.aclose()
    assert m.error is None and s.error is None
    assert m.unavailable["processes.memory"] == "needs superuser or pg_read_server_files"
    assert all(p.pss_bytes is None for p in m.processes)
    assert s.memory_source == "pg_read_file"
    assert "processes.memory" not in s.unavailable
    assert any(p.backend_type == "postmaster" and (p.pss_bytes or 0) > 0 for p in s.processes)
    assert sum(1 for p in s.processes if (p.pss_bytes or 0) > 0) >= 3


async def test_statements_for_older_versions_run(lab: Lab) -> None:
    """The PostgreSQL 12-14 statements are subsets PostgreSQL 15 still accepts."""
    import asyncpg

    i = lab.leader_index()
    conn = await asyncpg.connect(
        host="127.0.0.1",
        port=lab.layout.pg_port(i),
        user=SUPERUSER,
        database=DBNAME,
        passfile=str(lab.layout.pgpass),
    )
    try:
        real = Capabilities.from_row(await conn.fetchrow(PROBE_SQL))
        for version in (120000, 130000, 140000, real.version):
            caps = Capabilities(
                version=version,
                superuser=True,
                read_all_stats=True,
                ls_archive_status=True,
                control_checkpoint=True,
                progress_copy=version >= 140000,
                replication_slot_stats=version >= 140000,
                subscription_stats=version >= 150000,
                wal_segment_size=real.wal_segment_size,
            )
            text = await conn.fetchval(build_query(caps, remote_memory=True))
            assert isinstance(text, str) and text.startswith("{")
    finally:
        await conn.close()


async def test_frozen_node_does_not_delay_the_others(lab: Lab, poller: Poller) -> None:
    warm = await poller.cycle()
    leader = leader_node(warm)
    victim = next(n for n in NODE_NAMES if n != leader)
    assert all(n.error is None for n in warm.nodes)
    budget = 1.0
    try:
        faults.freeze(quiet(lab), victim)
        frozen_at = time.monotonic()
        started = time.monotonic()
        snap = await poller.cycle(budget=budget)
        took = time.monotonic() - started
        assert took < budget + 0.5, took
        # Inside its own time limit a frozen node is slow, not unreachable: its last answer is
        # kept, with how long the poll has waited (design §5).
        node = snap.node(victim)
        assert node is not None and node.error is None and node.slow_s is not None
        assert node.last_ok_at == warm.node(victim).last_ok_at  # type: ignore[union-attr]
        for other in (n for n in snap.nodes if n.name != victim):
            assert other.error is None, other.error
            assert other.last_ok_at is not None and other.last_ok_at > warm.taken_at
        # Its own /patroni is asked every calm interval while all looks calm; a node that waits a
        # second makes the cluster restless, and the next cycle asks it: slow, not unreachable.
        snap = await poller.cycle(budget=budget)
        member = snap.member(victim)
        assert member is not None and member.reachable and member.slow_s is not None
        # Later cycles stay on time while the frozen node's poll runs into its own limit

        # (statement_timeout + 0.5 s): then, and only then, it is unreachable.
        for _ in range(4):
            started = time.monotonic()
            later = await poller.cycle(budget=budget)
            assert time.monotonic() - started < budget + 0.5
            assert all(n.error is None for n in later.nodes if n.name != victim)
            seen = later.node(victim)
            assert seen is not None and (seen.error is not None or seen.slow_s is not None)
        assert later.node(victim).error is not None  # type: ignore[union-attr]
        assert time.monotonic() - frozen_at < 10
    finally:
        faults.thaw(quiet(lab), victim)
    await until_seen(poller, lambda s: all(n.error is None for n in s.nodes), 60, f"{victim} back after thaw")


async def test_haproxy_routes_like_patroni(lab: Lab, poller: Poller) -> None:
    """Writer UP on the leader only, readers UP on the replicas (after checks settle)."""

    def up(s: ClusterSnapshot, proxy: str) -> set[str]:
        return {x.server for x in s.haproxy.servers if x.proxy == proxy and x.status == "UP"}

    snap = await until_seen(
        poller,
        lambda s: (
            s.cluster.leader is not None
            and up(s, "pg_writer") == {s.cluster.leader}
            and up(s, "pg_reader") == set(NODE_NAMES) - {s.cluster.leader}
        ),
        60,
        "HAProxy routing like Patroni",
    )
    assert snap.haproxy.error is None
    assert all(x.last_change_s is not None for x in snap.haproxy.servers)
    down = [x for x in snap.haproxy.servers if x.proxy == "pg_writer" and x.status != "UP"]
    assert all(x.check_status for x in down)


async def test_haproxy_socket_answers_server_rows_only_the_same_as_the_stats_page(
    lab_settings: Settings,
) -> None:
    """The socket is asked for servers only: no FRONTEND/BACKEND rows, the servers the page lists."""
    hap = lab_settings.haproxy
    assert hap.socket is not None and hap.url is not None
    text = await haproxy.fetch_socket(hap.socket)
    names = {line.split(",")[1] for line in text.splitlines()[1:] if line}
    assert names and not names & haproxy.AGGREGATES
    http = GetOnlyClient(timeout=hap.timeout)
    try:
        page = await haproxy.fetch_http(http, hap.url, hap.timeout)
    finally:
        await http.aclose()
    assert "FRONTEND" in page  # the page has them: the filter is the socket's request
    # Counters move between the two reads; the servers listed do not.
    listed = {(s.proxy, s.server) for s in haproxy.parse_stat_csv(text)}
    assert listed == {(s.proxy, s.server) for s in haproxy.parse_stat_csv(page)}


async def test_snapshot_cli_json(lab: Lab) -> None:
    """`pgtop-ha snapshot --json` as a script runs it (the test knobs kept out of its env)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGTOP_HA_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pgtop_ha", "snapshot", "--json",
        "--config", str(lab.layout.console_config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    data = json.loads(out)
    assert data["cluster"]["leader"] == lab.leader()
    assert [n["name"] for n in data["nodes"]] == list(NODE_NAMES)
    assert all(n["error"] is None for n in data["nodes"])
    assert all(m["reachable"] for m in data["members"])


async def test_a_killed_postmaster_is_failing_from_its_connections_loss(
    lab: Lab, lab_settings: Settings
) -> None:
    """The loss is heard when the kept connection drops, and the failing read is dated from it."""
    i = lab.leader_index()
    target = Target(name=NODE_NAMES[i], host="127.0.0.1", port=lab.layout.pg_port(i), dbname=DBNAME)
    reader = NodeReader(target, lab_settings.postgres, system_clock)
    try:
        await reader.start()
        assert reader.view().reachable and reader.lost_at is None
        killed_at = datetime.now(UTC)
        faults.kill_primary(lab)
        deadline = time.monotonic() + 5
        while reader.lost_at is None:  # heard with no poll running
            assert time.monotonic() < deadline, "the connection's loss was not heard"
            await asyncio.sleep(0.02)
        lost = reader.lost_at
        await reader.start()
        down = reader.view()
    finally:
        await reader.aclose()
    assert not down.reachable and down.failing_since == lost, down
    assert -0.05 <= (lost - killed_at).total_seconds() < 0.5
