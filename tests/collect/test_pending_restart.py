"""Pending restarts cost pg_settings only after a reload; every statement variant runs on the lab."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import asyncpg
import pytest

from pgtop_ha.clock import system_clock
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.pgquery import CALM_PARTS, PROBE_SQL, Capabilities, build_query
from pgtop_ha.collect.postgres import NodeReader, Target, parse_document
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, NODE_NAMES, SUPERUSER
from pgtop_ha.models.snapshot import NodeSnapshot
from pgtop_ha.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"
# Postmaster context (a change waits for a restart) and harmless on a replica.
SETTING = "track_activity_query_size"


def _caps(version: int = 150000) -> Capabilities:
    return Capabilities(
        version=version,
        read_all_stats=True,
        monitor=True,
        ls_archive_status=True,
        progress_copy=True,
        replication_slot_stats=True,
        subscription_stats=True,
        wal_segment_size=16 * 1024 * 1024,
    )


@pytest.mark.parametrize(("remote", "slow"), [(False, False), (False, True), (True, True)])
def test_every_variant_reports_the_load_time(remote: bool, slow: bool) -> None:
    sql = build_query(_caps(), remote_memory=remote, slow=slow)
    assert "'conf_load_time', pg_conf_load_time()::text" in sql
    assert ("pg_settings" in sql) == slow


def test_parse_keeps_the_load_time() -> None:
    doc = json.loads((FIXTURES / "doc_primary_monitor.json").read_text())
    doc["conf_load_time"] = "2026-11-22 08:00:00.123456+00"
    parsed = parse_document(json.dumps(doc), _caps())
    assert parsed.conf_load_time == "2026-11-22 08:00:00.123456+00"
    doc["conf_load_time"] = 17  # the statement sends text: a number is a broken answer, named
    with pytest.raises(ParseError, match="conf_load_time"):
        parse_document(json.dumps(doc), _caps())
    del doc["conf_load_time"]
    assert parse_document(json.dumps(doc), _caps()).conf_load_time is None


def test_the_calm_parts_are_left_out_of_the_quick_statement() -> None:
    quick = build_query(_caps(), remote_memory=False, slow=False, calm=False)
    for key in CALM_PARTS:
        assert f"'{key}'," not in quick
        for sql in (
            build_query(_caps(), remote_memory=False, slow=False),
            build_query(_caps(), remote_memory=False),
        ):
            assert f"'{key}'," in sql
    assert "'processes'," in quick and "'slots'," in quick  # the failover's facts, every cycle


@pytest.mark.lab
async def test_each_variant_runs_on_the_lab(lab: Lab, lab_settings: Settings) -> None:
    """Light, pending and remote-memory statements, as pgtop_monitor and as the superuser."""
    i = lab.leader_index()
    for user in (lab_settings.postgres.user, SUPERUSER):
        conn = await asyncpg.connect(
            host="127.0.0.1",
            port=lab.layout.pg_port(i),
            user=user,
            database=DBNAME,
            passfile=str(lab.layout.pgpass),
        )
        try:
            caps = Capabilities.from_row(await conn.fetchrow(PROBE_SQL))
            load_time = await conn.fetchval("select pg_conf_load_time()::text")
            for remote, slow in ((False, False), (False, True), (caps.remote_memory, True)):
                text = await conn.fetchval(build_query(caps, remote_memory=remote, slow=slow))
                parsed = parse_document(text, caps)
                assert parsed.conf_load_time == load_time, (user, remote, slow)
                assert ("pending_restart" in parsed.fields) == slow, (user, remote, slow)
                assert parsed.processes, (user, remote, slow)
        finally:
            await conn.close()


async def _poll(reader: NodeReader) -> NodeSnapshot:
    await reader.start()
    node = reader.view()
    assert node.error is None, node.error
    return node


async def _until_pending(reader: NodeReader, want: bool, within_s: float) -> NodeSnapshot:
    deadline = time.monotonic() + within_s
    node = await _poll(reader)
    while (SETTING in {p.name for p in node.pending_restart}) != want:
        if time.monotonic() > deadline:
            pytest.fail(f"{SETTING} pending={want} not seen within {within_s}s: {node.pending_restart}")
        await asyncio.sleep(0.2)  # pacing between polls, not synchronisation
        node = await _poll(reader)
    return node


@pytest.mark.lab
async def test_pending_restart_is_read_after_a_reload_only(lab: Lab, lab_settings: Settings) -> None:
    """Quiet cycles skip pg_settings; a reload is followed by one read that sees the change."""
    i = next(k for k in range(len(NODE_NAMES)) if k != lab.leader_index())
    target = Target(name=NODE_NAMES[i], host="127.0.0.1", port=lab.layout.pg_port(i), dbname=DBNAME)
    reader = NodeReader(target, lab_settings.postgres, system_clock)
    try:
        await _poll(reader)
        assert reader.pending_reads == 1  # a new connection reads them at once
        horizon = reader.view().horizon
        for _ in range(6):  # quiet cycles: no reload, so no pg_settings
            await _poll(reader)
        assert reader.pending_reads == 1
        # The calm parts come with the first read, then every CALM_REFRESH_S; kept between.
        assert reader.calm_reads <= 2 and reader.view().horizon is not None
        assert reader.view().archiver is not None and horizon is not None
        running = lab.psql(f"show {SETTING}", node=i).strip()
        try:
            lab.psql(f"alter system set {SETTING} = 2048", node=i)
            lab.psql("select pg_reload_conf()", node=i)
            node = await _until_pending(reader, True, 10)
            assert any(p.name == SETTING and p.context == "postmaster" for p in node.pending_restart)
            reads = reader.pending_reads
            await _poll(reader)
            await _poll(reader)
            assert reader.pending_reads == reads
        finally:
            # Back to the running value: that clears the flag (a RESET would keep it, since a
            # removed line also waits for a restart).
            lab.psql(f"alter system set {SETTING} = '{running}'", node=i)
            lab.psql("select pg_reload_conf()", node=i)
        await _until_pending(reader, False, 10)
    finally:
        await reader.aclose()
