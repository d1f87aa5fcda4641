"""Client probes against the real lab: through HAProxy's ports, across a switchover, read-only."""

from __future__ import annotations

import io
import socket
import sys

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.console import build_poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import OPERATOR_USER
from pgtop_ha.models.snapshot import ClusterSnapshot, Probe
from pgtop_ha.settings import Settings
from tests.support.lab_polls import until_seen

pytestmark = pytest.mark.lab

TABLE = "pgtopha_probe_writes"


def with_probes(
    settings: Settings, lab: Lab, *, table: str | None = None, dead: int | None = None
) -> Settings:
    """The lab's settings probing its writer and reader ports (and a dead port when given)."""
    endpoints: list[dict[str, object]] = [
        {"name": "writer", "host": "127.0.0.1", "port": lab.layout.writer_port, "kind": "writer"},
        {"name": "reader", "host": "127.0.0.1", "port": lab.layout.reader_port, "kind": "reader"},
    ]
    if dead is not None:
        endpoints.append({"name": "dead", "host": "127.0.0.1", "port": dead, "kind": "pooler"})
    tree = settings.model_dump()
    tree["probes"] = {"endpoints": endpoints, "timeout": 2.0, "write_table": table}
    tree.pop("patroni_password", None)
    return Settings.model_validate(tree)


def probe(snap: ClusterSnapshot, endpoint: str, kind: str | None = None) -> Probe:
    found = [p for p in snap.probes if p.endpoint == endpoint and (kind is None or p.kind == kind)]
    assert len(found) == 1, snap.probes
    return found[0]


def make_table(lab: Lab) -> int:
    """The write probe's table (created once), and how many rows it has now."""
    leader = lab.leader()
    assert leader is not None
    lab.psql(
        f"create table if not exists {TABLE} (at timestamptz not null default now(), "
        f"by text not null default inet_server_port()::text); grant insert on {TABLE} to {OPERATOR_USER}",
        node=leader,
    )
    return rows_in(lab)


def rows_in(lab: Lab) -> int:
    leader = lab.leader()
    assert leader is not None
    return int(lab.psql(f"select count(*) from {TABLE}", node=leader))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_writer_answers_from_the_leader_reader_from_a_replica(lab: Lab, lab_settings: Settings) -> None:
    dead = free_port()
    poller = Poller.from_settings(with_probes(lab_settings, lab, dead=dead))
    try:
        snap = await until_seen(
            poller,
            lambda s: probe(s, "writer").ok and probe(s, "reader").ok and s.cluster.leader is not None,
            20,
            "writer and reader probes answering",
        )
    finally:
        await poller.aclose()
    leader = lab.leader()
    writer, reader, bad = probe(snap, "writer"), probe(snap, "reader"), probe(snap, "dead")
    assert writer.answered_by == leader and writer.in_recovery is False
    assert reader.answered_by in {m.name for m in snap.members} - {leader} and reader.in_recovery is True
    assert writer.latency_ms is not None and 0 < writer.latency_ms < 2000
    # A refused port is one line on its own row; everything else still answers.
    assert not bad.ok and bad.errors >= 1 and bad.error is not None and "\n" not in bad.error
    assert f"127.0.0.1:{dead}" in bad.error
    assert all(n.reachable for n in snap.nodes), [n.error for n in snap.nodes]


async def test_probes_follow_a_switchover_and_the_write_outage_is_measured(
    lab: Lab, lab_settings: Settings
) -> None:
    make_table(lab)
    poller = build_poller(with_probes(lab_settings, lab, table=TABLE), operator=True)
    try:
        before = await until_seen(
            poller, lambda s: probe(s, "writer", "write").ok, 20, "the write probe writing"
        )
        old = lab.leader()
        assert probe(before, "writer", "write").answered_by == old
        written = rows_in(lab)
        assert written >= 1
        faults.switchover(Lab(lab.layout, out=io.StringIO()))
        new = lab.leader()
        assert new is not None and new != old
        after = await until_seen(
            poller,
            lambda s: (
                probe(s, "writer", "writer").answered_by == new
                and probe(s, "writer", "write").answered_by == new
                and probe(s, "writer", "write").ok
            ),
            45,
            f"writer and write probes answered by {new}",
        )
    finally:
        await poller.aclose()
    write = probe(after, "writer", "write")
    assert write.errors == 0 and write.last_ok_at is not None
    assert rows_in(lab) > written
    for outage in write.outages:  # a gap, if the probe hit one, is measured from the writes
        assert outage.duration_s >= 0 and outage.ended_at >= outage.started_at
    if write.outages:
        last = write.outages[-1]
        assert last.member == new and last.failures >= 1
        print(
            f"write outage: {last.duration_s:.2f}s, {last.failures} failed writes, taken by {new}",
            file=sys.stderr,
        )


async def test_read_only_sends_no_write_probe(lab: Lab, lab_settings: Settings) -> None:
    make_table(lab)
    before = rows_in(lab)
    poller = build_poller(with_probes(lab_settings, lab, table=TABLE), operator=False)
    try:
        snap = await until_seen(poller, lambda s: probe(s, "writer").ok, 20, "the writer probe answering")
        for _ in range(3):
            snap = await poller.cycle(budget=2.5)
    finally:
        await poller.aclose()
    assert [p.kind for p in snap.probes if p.kind != "pooler"] == ["writer", "reader"]  # no "write"
    assert rows_in(lab) == before


async def test_kill_primary_shows_write_errors_while_patroni_still_names_the_leader(
    lab: Lab, lab_settings: Settings
) -> None:
    poller = Poller.from_settings(with_probes(lab_settings, lab))
    try:
        before = await until_seen(poller, lambda s: probe(s, "writer").ok, 20, "the writer probe answering")
        old = probe(before, "writer").answered_by
        assert old is not None and old == before.cluster.leader
        faults.kill_primary(Lab(lab.layout, out=io.StringIO()))
        # Patroni restarts PostgreSQL in place: the writer port fails while Patroni keeps the leader.
        gap = await until_seen(
            poller,
            lambda s: probe(s, "writer").errors >= 1 and s.cluster.leader == old,
            20,
            f"writer probe errors while Patroni still names {old} leader",
        )
        failed = probe(gap, "writer")
        assert failed.first_error is not None and "\n" not in failed.first_error
        assert failed.last_ok_at is not None and failed.last_ok_at <= gap.taken_at
        back = await until_seen(
            poller, lambda s: probe(s, "writer").ok, 90, "the writer probe answering again"
        )
    finally:
        await poller.aclose()
    assert probe(back, "writer").errors == 0
