"""Actions against the real lab: switchover, stats resets, and a missing privilege explained."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from pgtop_ha.actions import Actions, ResetScope, ResetTarget, build_actions
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, NODE_NAMES, PERMANENT_SLOT
from pgtop_ha.settings import Settings

pytestmark = pytest.mark.lab


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` until true or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def target(lab: Lab, name: str) -> ResetTarget:
    return ResetTarget(name=name, host="127.0.0.1", port=lab.layout.pg_port(lab.index(name)), dbname=DBNAME)


@pytest.fixture
async def actions(lab_settings: Settings, tmp_path: Path) -> AsyncIterator[Actions]:
    built = build_actions(lab_settings.model_copy(update={"audit_log": tmp_path / "audit.log"}))
    yield built
    await built.aclose()


async def test_switchover_makes_the_candidate_leader(lab: Lab, actions: Actions) -> None:
    leader = lab.leader()
    assert leader is not None
    candidate = next(n for n in NODE_NAMES if n != leader)
    steps: list[str] = []
    result = await actions.switchover(leader, candidate, progress=steps.append)
    assert result.ok, result.message
    assert result.new_leader == candidate
    assert lab.leader() == candidate
    assert result.duration_s < 60
    assert steps[0] == f"POST /switchover {leader} → {candidate}"
    entry = actions.audit_entries()[-1]
    assert (entry.action, entry.target, entry.ok) == ("switchover", candidate, True)


async def test_switchover_to_a_bad_candidate_gives_patronis_reason(lab: Lab, actions: Actions) -> None:
    leader = lab.leader()
    assert leader is not None
    result = await actions.switchover(leader, "no-such-node")
    assert not result.ok
    assert result.status == 412
    assert result.reason == "candidate does not exists"
    assert lab.leader() == leader


async def test_slot_reset_changes_stats_reset(lab: Lab, actions: Actions) -> None:
    leader = lab.leader()
    assert leader is not None
    sql = (
        f"SELECT coalesce(stats_reset::text, 'never') FROM pg_stat_replication_slots "
        f"WHERE slot_name = '{PERMANENT_SLOT}'"
    )
    # A slot gets a statistics entry (which a reset can stamp) once something was decoded from
    # it; Patroni's copy of a permanent slot on a new leader has none yet.
    lab.psql("CREATE TABLE IF NOT EXISTS slot_probe (x int); INSERT INTO slot_probe VALUES (1)", node=leader)
    lab.psql(
        f"SELECT count(*) FROM pg_logical_slot_peek_binary_changes('{PERMANENT_SLOT}', "
        "NULL, 1, 'proto_version', '1', 'publication_names', 'lab_pub')",
        node=leader,
    )
    before = lab.psql(sql, node=leader)
    assert before, "the permanent slot has no statistics row on the leader"
    result = await actions.reset_stats(
        ResetScope(kind="slot", slot_name=PERMANENT_SLOT), [target(lab, leader)]
    )
    assert result.ok, result.message
    assert [(n.node, n.ok) for n in result.nodes] == [(leader, True)]
    after = lab.psql(sql, node=leader)
    assert after not in (before, "never")


async def test_archiver_reset_zeroes_archived_count(lab: Lab, actions: Actions) -> None:
    leader = lab.leader()
    assert leader is not None
    lab.psql(
        "CREATE TABLE IF NOT EXISTS archiver_probe (x int); INSERT INTO archiver_probe "
        "VALUES (1); SELECT pg_switch_wal();",
        node=leader,
    )
    count = "SELECT archived_count FROM pg_stat_archiver"
    wait_for(lambda: int(lab.psql(count, node=leader)) > 0, 60, "a segment archived")
    calls = (
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query ILIKE "
        "'%pg_stat_reset_shared%' AND query NOT ILIKE '%pg_stat_statements%'"
    )
    calls_before = int(lab.psql(calls, node=leader))
    result = await actions.reset_stats(ResetScope(kind="archiver"), [target(lab, leader)])
    assert result.ok, result.message
    assert int(lab.psql(count, node=leader)) == 0
    # What the read-only test relies on: pg_stat_statements sees a reset call.
    assert int(lab.psql(calls, node=leader)) == calls_before + 1
    audit = actions.audit_entries()[-1]
    assert audit.action == "reset pg_stat_reset_shared('archiver')"
    assert audit.target == leader


async def test_missing_privilege_is_one_line(lab: Lab, lab_settings: Settings, tmp_path: Path) -> None:
    # pgtop_monitor has pg_monitor only: it may not reset anything.
    settings = lab_settings.model_copy(
        update={
            "audit_log": tmp_path / "audit.log",
            "postgres": lab_settings.postgres.model_copy(update={"operator_user": "pgtop_monitor"}),
        }
    )
    actions = build_actions(settings)
    try:
        result = await actions.reset_stats(ResetScope(kind="archiver"), [target(lab, n) for n in NODE_NAMES])
    finally:
        await actions.aclose()
    assert not result.ok
    expected = (
        "pgtop_monitor may not run pg_stat_reset_shared: GRANT EXECUTE ON FUNCTION "
        "pg_stat_reset_shared(text) TO pgtop_monitor, or use a superuser"
    )
    assert [n.message for n in result.nodes] == [expected] * len(NODE_NAMES)
    assert "\n" not in result.message


async def test_unreachable_node_is_reported_per_node(lab: Lab, actions: Actions) -> None:
    leader = lab.leader()
    assert leader is not None
    dead = ResetTarget(name="ghost", host="127.0.0.1", port=lab.layout.base_port + 45)
    result = await actions.reset_stats(ResetScope(kind="database"), [target(lab, leader), dead])
    assert not result.ok
    by = {n.node: n for n in result.nodes}
    assert by[leader].ok
    assert not by["ghost"].ok and "cannot connect" in by["ghost"].message
