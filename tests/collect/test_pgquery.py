"""The PostgreSQL statement: built per version and grant, parsed into the snapshot's parts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.pgquery import Capabilities, build_query, sql_variants, unavailable, view_sql
from pgtop_ha.collect.postgres import parse_document, server_settings, tls_dsn
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.settings import PostgresSettings
from tests.support.clocks import fixed_clock

FIXTURES = Path(__file__).parent / "fixtures"


def _caps(version: int, **grants: Any) -> Capabilities:
    return Capabilities(
        version=version,
        progress_copy=version >= 140000,
        replication_slot_stats=version >= 140000,
        subscription_stats=version >= 150000,
        wal_segment_size=16 * 1024 * 1024,
        **grants,
    )


MONITOR = {"read_all_stats": True, "monitor": True, "ls_archive_status": True}


@pytest.mark.parametrize("version", [120000, 130000, 140000, 150000, 160000, 170000])
def test_statement_matches_version(version: int) -> None:
    sql = build_query(_caps(version, **MONITOR), remote_memory=False)
    assert sql.startswith("with pg_stat_activity as materialized") and "select json_build_object(" in sql
    # Backends are listed once per statement: no part reads the catalog's views of them again.
    assert sql.count("pg_catalog.pg_stat_activity") == 1 and "from pg_stat_replication " not in sql
    assert ("pg_stat_progress_copy" in sql) == (version >= 140000)
    # A logical slot's statistics by its name: pg_stat_replication_slots would list the slots again.
    assert ("pg_stat_get_replication_slot(s.slot_name)" in sql) == (version >= 140000)
    assert "pg_stat_replication_slots" not in sql and sql.count("pg_replication_slots") == 2
    assert ("pg_get_wal_replay_pause_state" in sql) == (version >= 140000)
    assert ("pg_is_wal_replay_paused" in sql) == (version < 140000)
    assert ("wal_status" in sql) == (version >= 130000)
    assert ("s.conflicting" in sql) == (version >= 160000)
    assert ("s.failover" in sql) == (version >= 170000)
    assert "pg_read_file" not in sql
    missing = unavailable(_caps(version, **MONITOR), local_memory=True)
    assert ("copy_progress" in missing) == (version < 140000)
    if version < 140000:
        assert missing["copy_progress"] == "n/a (PostgreSQL 14+)"
        assert missing["slots.stats"] == "n/a (PostgreSQL 14+)"
    assert "replication" not in missing
    assert "processes.memory" not in missing


def test_idle_sessions_are_counted_unless_their_memory_is_read() -> None:
    caps = _caps(150000, **MONITOR)
    calm = build_query(caps, remote_memory=False, needs=frozenset({"sessions"}))
    not_idle = "where (a.backend_type = 'client backend' and a.state = 'idle') is not true"
    # The list of backends leaves them out; the processes and the count of idle ones read that list.
    listed = f"(select * from pg_catalog.pg_stat_activity a {not_idle})"
    assert calm.startswith(f"with pg_stat_activity as materialized {listed}")
    assert calm.count(not_idle) == 2 and "where not (a.backend_type" in calm and "'idle_sessions'" in calm
    # The backends are counted once, for the total and the idle count.
    assert calm.count("pg_stat_get_backend_idset()") == 1 and calm.count("(select n from backend_count)") == 2
    for memory in (build_query(caps, remote_memory=False, needs=frozenset({"memory"})),
                   build_query(caps, remote_memory=True)):  # fmt: skip
        assert not_idle not in memory and "'idle_sessions'" not in memory
    # A lock tree names its idle blockers (a session-level advisory lock): the list keeps them.
    locks = build_query(caps, remote_memory=False, needs=frozenset({"sessions", "locks"}))
    assert "(select * from pg_catalog.pg_stat_activity)" in locks and locks.count(not_idle) == 1


def test_grants_shape_the_statement() -> None:
    bare = _caps(150000)
    sql = build_query(bare, remote_memory=False)
    assert "pg_ls_archive_statusdir" not in sql
    assert "pg_control_checkpoint" not in sql
    missing = unavailable(bare, local_memory=False)
    assert missing["archiver.ready_count"] == "needs pg_monitor"
    assert missing["replication"].startswith("needs pg_monitor")
    assert missing["processes.memory"] == "needs superuser or pg_read_server_files"
    superuser = _caps(150000, superuser=True, **MONITOR)
    assert superuser.remote_memory
    assert "smaps_rollup" in build_query(superuser, remote_memory=True)
    assert "processes.memory" not in unavailable(superuser, local_memory=False)
    granted = _caps(150000, read_server_files=True, read_file=True, **MONITOR)
    assert granted.remote_memory
    assert not _caps(150000, read_server_files=True, **MONITOR).remote_memory


def test_session_settings_and_tls() -> None:
    s = server_settings(PostgresSettings(statement_timeout_ms=1500))
    assert s["default_transaction_read_only"] == "on"
    assert s["application_name"] == "pgtop-ha"
    assert s["statement_timeout"] == "1500"
    assert int(s["lock_timeout"]) <= 1500
    assert tls_dsn(PostgresSettings()) is None
    dsn = tls_dsn(PostgresSettings(sslmode="verify-full", sslrootcert=Path("/etc/ca.pem")))
    assert dsn == "postgresql://?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem"


def test_parse_primary_document_as_monitor() -> None:
    caps = _caps(150000, **MONITOR)
    parsed = parse_document((FIXTURES / "doc_primary_monitor.json").read_text(), caps)
    f = parsed.fields
    assert f["in_recovery"] is False
    assert f["current_lsn"] > 0
    assert f["timeline"] >= 1
    # Two streaming replicas, whichever member led when the fixture was recorded.
    assert len({r.application_name for r in f["replication"]} & {"node1", "node2", "node3"}) == 2
    for row in f["replication"]:
        assert row.replay_lag_bytes is not None and row.replay_lag_bytes >= 0
    slots = {s.slot_name: s for s in f["slots"]}
    assert slots["lab_sub"].slot_type == "logical"
    assert slots["lab_sub"].retained_bytes is not None
    assert f["archiver"].current_wal is not None
    assert parsed.processes and parsed.remote_memory == {}
    assert parsed.backend_pid is not None


def test_parse_standby_document_with_remote_memory() -> None:
    caps = _caps(150000, superuser=True, **MONITOR)
    parsed = parse_document((FIXTURES / "doc_standby_superuser.json").read_text(), caps)
    assert parsed.fields["in_recovery"] is True
    assert parsed.fields["wal_receiver"].status == "streaming"
    assert parsed.remote_memory
    assert all(m.pss and m.pss > 0 for m in parsed.remote_memory.values())
    assert parsed.postmaster_pid is not None
    assert parsed.postmaster is not None and parsed.postmaster.pss
    assert parsed.hugepages is not None and parsed.hugepages.total is not None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "not json",
        json.dumps({"slots": "x"}),
        json.dumps({"replication": [{"pid": "x"}]}),
        json.dumps({"current_lsn": "x", "slots": [{"slot_name": "s", "restart_lsn": 1}]}),
        json.dumps({"in_recovery": "yes"}),
        json.dumps({"processes": [{"pid": 1}]}),  # a row per process: the statement sends columns
        json.dumps({"processes": {"pid": [1, 2], "state": ["active"]}}),
        json.dumps({"processes": {"pid": [1], "nobody": ["x"]}}),
        json.dumps({"processes": {"pid": None, "state": ["active"]}}),
    ],
)
def test_bad_documents(text: str) -> None:
    with pytest.raises(ParseError, match="postgres document"):
        parse_document(text, _caps(150000))


def test_processes_come_as_columns_and_none_listed_is_every_column_null() -> None:
    columns = {"pid": [7, 9], "state": ["active", None], "query_s": [1.5, None]}
    parsed = parse_document(json.dumps({"processes": columns}), _caps(150000))
    assert [(p.pid, p.state, p.query_s) for p in parsed.processes] == [(7, "active", 1.5), (9, None, None)]
    empty = parse_document(json.dumps({"processes": {"pid": None, "state": None}}), _caps(150000))
    assert empty.processes == []


@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "in_recovery",
                "slots",
                "replication",
                "processes",
                "archiver",
                "copy_progress",
                "subscriptions",
                "wal_receiver",
                "postmaster",
                "current_lsn",
                "pending_restart",
            ]
        ),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
            max_leaves=10,
        ),
        max_size=6,
    )
)
def test_fuzz_documents(doc: dict[str, object]) -> None:
    try:
        parsed = parse_document(json.dumps(doc), _caps(150000))
    except ParseError:
        return
    assert isinstance(parsed.fields, dict)
    assert all(isinstance(p.pid, int) for p in parsed.processes)


def test_every_sql_file_is_some_versions_query() -> None:
    # collect/sql/NAME[.pgNN].sql: each file is the newest variant for at least one major version,
    # so none is dead, and each major version 12..17 gets the newest file it can run.
    variants = sql_variants()
    chosen = {
        (name, max(m for m in majors if m <= major))
        for name, majors in variants.items()
        for major in range(12, 18)
        if any(m <= major for m in majors)
    }
    every = {(name, major) for name, majors in variants.items() for major in majors}
    assert chosen == every
    assert view_sql("copy", 130000) is None  # no pg_stat_progress_copy before 14
    assert "pg_stat_get_replication_slot" in (view_sql("slots", 140000) or "")
    assert "s.synced" in (view_sql("slots", 170000) or "")
    assert "s.synced" not in (view_sql("slots", 160000) or "")
    assert not any(t.lstrip().startswith("--") for m in variants.values() for t in m.values())


@pytest.mark.lab
async def test_fixtures_are_re_recorded_from_a_lab(lab: Lab, tmp_path: Path) -> None:
    # scripts/record_fixtures.py writes what the statement returns on the lab; the parse tests
    # must read its output as they read the committed fixtures.
    from scripts.record_fixtures import record

    written = await record(lab.layout.state_dir, tmp_path)
    assert {p.name for p in written} == {"doc_primary_monitor.json", "doc_standby_superuser.json"}
    primary = parse_document((tmp_path / "doc_primary_monitor.json").read_text(), _caps(150000, **MONITOR))
    assert primary.fields["in_recovery"] is False and primary.remote_memory == {}
    text = (tmp_path / "doc_standby_superuser.json").read_text()
    standby = parse_document(text, _caps(150000, superuser=True))
    assert standby.fields["in_recovery"] is True and standby.remote_memory


def test_the_same_document_again_is_last_cycles_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A quiet cluster answers the very same text most cycles: it is parsed once, and each cycle
    # gets its own copy to set its fields on.
    from pgtop_ha.collect import postgres
    from pgtop_ha.collect.postgres import NodeReader, Target

    calls: list[str] = []

    def counted(text: str, caps: Capabilities) -> postgres.Parsed:
        calls.append(text)
        return parse_document(text, caps)

    monkeypatch.setattr(postgres, "parse_document", counted)
    target = Target("node1", "127.0.0.1", 1, "postgres")
    reader = NodeReader(target, PostgresSettings(), fixed_clock(datetime.now(UTC)), proc=tmp_path)
    caps = _caps(150000, **MONITOR)
    text = (FIXTURES / "doc_primary_monitor.json").read_text()
    first = reader._parse(text, caps)
    first.fields["cache"] = "set by its cycle"
    again = reader._parse(text, caps)
    assert len(calls) == 1
    assert again is not first and again.fields["cache"] != "set by its cycle"
    assert again.processes == first.processes and again.processes is not first.processes
    assert again.fields["slots"] is first.fields["slots"]  # the same models: nothing moved
    moved = json.loads(text)
    moved["timeline"] += 1
    assert reader._parse(json.dumps(moved), caps).fields["timeline"] == first.fields["timeline"] + 1
    assert len(calls) == 2
    reader._parse(json.dumps(moved), _caps(150000, **MONITOR))  # another connection's capabilities
    assert len(calls) == 3


def test_the_hugepages_view_is_the_same_object_while_its_readings_are(tmp_path: Path) -> None:
    from pgtop_ha.collect.document import HugePagesSetting
    from pgtop_ha.collect.postgres import NodeReader, Target
    from pgtop_ha.models.snapshot import HugePages

    target = Target("node1", "127.0.0.1", 1, "postgres")
    reader = NodeReader(target, PostgresSettings(), fixed_clock(datetime.now(UTC)), proc=tmp_path)
    reader._hugepages = HugePages(total=64, free=10, size_bytes=2 * 1024 * 1024)
    reader._huge_setting = HugePagesSetting(setting="try")
    view = reader._hugepages_view()
    assert view is not None and view.setting == "try" and view.total == 64
    assert reader._hugepages_view() is view  # a pane tells "unchanged" by identity
    reader._huge_setting = HugePagesSetting(setting="on")
    moved = reader._hugepages_view()
    assert moved is not view and moved is not None and moved.setting == "on"
