"""pgBouncer and pgpool-II in front of the real lab (`lab up --with pgbouncer,pgpool`)."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.poolers import BouncerReading, PgpoolReading, bouncer_reader, pgpool_reader
from pgtop_ha.judge.poolers import pgpool_primary
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.lab import configs, faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.progress import Progress
from pgtop_ha.models.haproxy import DEFAULT_POOLS
from pgtop_ha.models.poolers import PgBouncerState, PgpoolState
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Thresholds
from pgtop_ha.settings import Settings, load_settings
from pgtop_ha.ui.panes import pgbouncer, pgpool
from pgtop_ha.ui.panes.base import Context
from tests.support.lab_polls import running, until_seen

pytestmark = pytest.mark.lab

POOLERS = ("pgbouncer", "pgpool")


@pytest.fixture(scope="module")
def pooled(lab_session: Lab) -> Lab:
    """The session's lab with pgBouncer and pgpool-II started (idempotent, as `lab up --with`)."""
    quiet = Lab(lab_session.layout, out=io.StringIO())
    quiet.start_poolers(POOLERS, Progress(total=1, out=io.StringIO()))
    return lab_session


@pytest.fixture
def pooled_settings(pooled: Lab, lab: Lab, tmp_path: Path) -> Settings:
    """The console config `lab up --with pgbouncer,pgpool` writes, for the healthy lab."""
    path = tmp_path / "pgtop-ha.toml"
    path.write_text(configs.console_config(lab.layout, POOLERS))
    return load_settings(path, environ={})


def bouncer(snap: ClusterSnapshot) -> PgBouncerState:
    assert len(snap.pgbouncer) == 1, snap.pgbouncer
    return snap.pgbouncer[0]


def pool(snap: ClusterSnapshot) -> PgpoolState:
    assert len(snap.pgpool) == 1, snap.pgpool
    return snap.pgpool[0]


def xacts(snap: ClusterSnapshot) -> int:
    return sum(s.xacts or 0 for s in bouncer(snap).stats if s.database != pgbouncer.ADMIN_DB)


def test_lab_up_with_poolers_tracks_them_by_pid(pooled: Lab) -> None:
    pids = pooled.running_pids()
    assert {"pgbouncer", "pgpool"} <= pids.keys()
    assert pooled.poolers() == POOLERS
    ports = pooled.layout.port_map()
    assert (ports["pgbouncer"], ports["pgpool"], ports["pgpool_pcp"]) == tuple(
        pooled.layout.base_port + n for n in (33, 34, 35)
    )


async def test_each_pooler_answers_its_commands_sent_in_one_write(pooled_settings: Settings) -> None:
    # Pipelined simple queries (wire.Connection.queries; one write, test_wire_hostile.py): the
    # real pgBouncer admin console and pgpool-II answer each command, in order, in one read.
    s = pooled_settings
    bouncer_r = bouncer_reader(s.pgbouncer[0], s.postgres, system_clock, None)
    pgpool_r = pgpool_reader(s.pgpool[0], s.postgres, system_clock, None)
    try:
        for reader in (bouncer_r, pgpool_r):
            task = reader.start()
            assert task is not None
            await task
        bouncer_read, pgpool_read = bouncer_r.source.reading(), pgpool_r.source.reading()
    finally:
        await bouncer_r.aclose()
        await pgpool_r.aclose()
    assert bouncer_read.error is None and isinstance(bouncer_read.value, BouncerReading)
    # Pools and stats exist once a client came: the admin console's own (this read) at least.
    assert any(p.database == pgbouncer.ADMIN_DB for p in bouncer_read.value.pools)
    assert {"labdb", pgbouncer.ADMIN_DB} <= {d.name for d in bouncer_read.value.databases}
    assert any(st.database == pgbouncer.ADMIN_DB for st in bouncer_read.value.stats)
    assert pgpool_read.error is None and isinstance(pgpool_read.value, PgpoolReading)
    assert len(pgpool_read.value.nodes) == 3 and pgpool_read.value.processes_error is None
    assert pgpool_read.value.processes is not None and pgpool_read.value.processes.children > 0


async def test_pgbouncer_pool_counters_move_under_load(pooled: Lab, pooled_settings: Settings) -> None:
    poller = Poller.from_settings(pooled_settings)
    try:
        before = await until_seen(
            poller,
            lambda s: bouncer(s).ok and any(p.endpoint == "pgbouncer" and p.ok for p in s.probes),
            20,
            "pgBouncer read, and probed through its client port",
        )
        # Probed by default as a pooler: a client through it lands on the leader (via the writer port).
        client = next(p for p in before.probes if p.endpoint == "pgbouncer")
        assert (
            client.kind == "pooler" and client.answered_by == pooled.leader() and client.in_recovery is False
        )
        # Where the lab's database points: HAProxy's writer port, not a member.
        labdb = next(d for d in bouncer(before).databases if d.name == "labdb")
        assert (labdb.port, labdb.member) == (pooled.layout.writer_port, None)
        with running(lambda: faults.load(Lab(pooled.layout, out=io.StringIO()), 8), 90):
            busy = await until_seen(
                poller,
                lambda s: (
                    bouncer(s).ok
                    and xacts(s) > xacts(before) + 50
                    and any(
                        (p.sv_active or 0) + (p.sv_idle or 0) > 0 and p.user == "postgres"
                        for p in bouncer(s).pools
                    )
                ),
                60,
                "pgBouncer pools serving pgbench",
            )
        ctx = Context(thresholds=Thresholds(), pools=DEFAULT_POOLS, now=datetime.now(UTC), history=(before,))
        row = next(r for r in pgbouncer.database_rows(busy, ctx) if r.key.endswith("|db|labdb"))
    finally:
        await poller.aclose()
    rate = row.cells["xacts"].sort
    assert isinstance(rate, float) and rate > 0  # a rate, from two reads
    assert "writer endpoint" in row.cells["points"].text


async def test_pgpool_primary_follows_patronis_leader(pooled: Lab, pooled_settings: Settings) -> None:
    poller = Poller.from_settings(pooled_settings)
    try:
        old = pooled.leader()
        first = await until_seen(
            poller,
            lambda s: pool(s).ok and (p := pgpool_primary(pool(s))) is not None and p.member == old,
            60,
            f"pgpool naming {old} primary",
        )
        assert {n.member for n in pool(first).nodes} == {m.name for m in first.members}
        faults.switchover(Lab(pooled.layout, out=io.StringIO()))
        new = pooled.leader()
        assert new is not None and new != old
        after = await until_seen(
            poller,
            lambda s: pool(s).ok and (p := pgpool_primary(pool(s))) is not None and p.member == new,
            60,
            f"pgpool following Patroni to {new}",
        )
    finally:
        await poller.aclose()
    problems = [p.text for p in cluster_problems(after, Thresholds(), DEFAULT_POOLS, after.taken_at)]
    assert not [t for t in problems if t.startswith("pgpool: primary is")], problems


async def test_bad_admin_credentials_are_one_line_in_the_pane(
    pooled: Lab, pooled_settings: Settings, tmp_path: Path
) -> None:
    # The lab's passfile plus a line for a role the poolers do not know, with a made-up password.
    passfile = tmp_path / "pgpass"
    passfile.write_text(pooled.layout.pgpass.read_text() + "*:*:*:pgtop_intruder:not-the-password\n")
    passfile.chmod(0o600)
    tree = pooled_settings.model_dump()
    tree.pop("patroni_password", None)
    tree["postgres"]["passfile"] = str(passfile)
    for section in ("pgbouncer", "pgpool"):
        tree[section][0]["user"] = "pgtop_intruder"
    poller = Poller.from_settings(Settings.model_validate(tree))
    try:
        snap = await until_seen(
            poller,
            lambda s: bouncer(s).error is not None and pool(s).error is not None and bool(s.members),
            20,
            "both poolers refusing the login",
        )
    finally:
        await poller.aclose()
    for error in (bouncer(snap).error, pool(snap).error):
        assert error is not None and "\n" not in error
        assert "authentication failed" in error and "not-the-password" not in error
    ctx = Context(thresholds=Thresholds(), pools=DEFAULT_POOLS, now=snap.taken_at)
    bouncer_rows = pgbouncer.rows(snap, ctx)
    pool_rows = pgpool.rows(snap, ctx)
    assert "authentication failed" in bouncer_rows[0].cells["detail"].text
    assert "authentication failed" in pool_rows[0].cells["detail"].text
    # The members are still read: a pooler's refusal is its own row, nothing else fails.
    assert all(n.reachable for n in snap.nodes), [n.error for n in snap.nodes]
