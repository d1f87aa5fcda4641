"""Reset scopes: exact calls, version limits, and the choices a snapshot offers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pgtop_ha.actions.reset_scopes import ResetScope, reset_choices, reset_targets
from pgtop_ha.models.snapshot import ClusterInfo, ClusterSnapshot, Member, NodeSnapshot, Slot

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("scope", "call", "sql", "args", "signature"),
    [
        (
            ResetScope(kind="slot", slot_name="lab_sub"),
            "pg_stat_reset_replication_slot('lab_sub')",
            "SELECT pg_stat_reset_replication_slot($1)",
            ("lab_sub",),
            "pg_stat_reset_replication_slot(text)",
        ),
        (
            ResetScope(kind="archiver"),
            "pg_stat_reset_shared('archiver')",
            "SELECT pg_stat_reset_shared($1)",
            ("archiver",),
            "pg_stat_reset_shared(text)",
        ),
        (ResetScope(kind="database"), "pg_stat_reset()", "SELECT pg_stat_reset()", (), "pg_stat_reset()"),
    ],
)
def test_calls(scope: ResetScope, call: str, sql: str, args: tuple[str, ...], signature: str) -> None:
    assert scope.call == call
    assert scope.statement == (sql, args)
    assert scope.signature == signature


def test_slot_name_is_quoted_for_display_and_passed_as_parameter() -> None:
    scope = ResetScope(kind="slot", slot_name="o'neil")
    assert scope.call == "pg_stat_reset_replication_slot('o''neil')"
    assert scope.statement[1] == ("o'neil",)


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [
        ("wal", 130000, 140000),
        ("recovery_prefetch", 140000, 150000),
        ("io", 150000, 160000),
        ("checkpointer", 160000, 170000),
        ("slot", 130000, 140000),
    ],
)
def test_version_limits(kind: str, old: int, new: int) -> None:
    scope = ResetScope.model_validate({"kind": kind, "slot_name": "s"})
    assert scope.unsupported(new) is None
    why = scope.unsupported(old)
    assert why is not None and f"needs PostgreSQL {new // 10000}+" in why


def _snapshot(version: int = 150000) -> ClusterSnapshot:
    def node(name: str, slots: tuple[Slot, ...]) -> NodeSnapshot:
        return NodeSnapshot(
            name=name,
            host="127.0.0.1",
            port=25410 + int(name[-1]),
            reachable=True,
            server_version=version,
            slots=slots,
        )

    logical = Slot(slot_name="lab_sub", slot_type="logical")
    physical = Slot(slot_name="node2", slot_type="physical")
    return ClusterSnapshot(
        taken_at=T0,
        cluster=ClusterInfo(name="pgtop-lab", leader="node2"),
        members=(
            Member(name="node1", role="replica"),
            Member(name="node2", role="leader"),
            Member(name="node3", role="replica", host="10.0.0.3", port=5432),
        ),
        nodes=(node("node1", (logical,)), node("node2", (logical, physical))),
    )


def test_targets_fall_back_to_member_addresses() -> None:
    targets = reset_targets(_snapshot())
    assert [(t.name, t.host, t.port) for t in targets] == [
        ("node1", "127.0.0.1", 25411),
        ("node2", "127.0.0.1", 25412),
        ("node3", "10.0.0.3", 5432),
    ]


def test_choices_on_15() -> None:
    choices = {c.scope.call: c for c in reset_choices(_snapshot(150000))}
    slot = choices["pg_stat_reset_replication_slot('lab_sub')"]
    # Only the nodes holding the logical slot; physical slots have no counters.
    assert [t.name for t in slot.nodes] == ["node1", "node2"]
    assert slot.default_nodes == ("node1", "node2")
    assert "pg_stat_reset_replication_slot('node2')" not in choices
    archiver = choices["pg_stat_reset_shared('archiver')"]
    assert archiver.default_nodes == ("node2",)  # the leader
    assert "pg_stat_reset_shared('recovery_prefetch')" in choices
    # 15 has no io/checkpointer scope: only node3 (version unknown) is still offered them.
    assert [t.name for t in choices["pg_stat_reset_shared('io')"].nodes] == ["node3"]
    assert [t.name for t in choices["pg_stat_reset_shared('checkpointer')"].nodes] == ["node3"]
    assert "pg_stat_reset()" in choices


def test_choices_on_13_have_no_slot_or_wal() -> None:
    calls = {c.scope.call for c in reset_choices(_snapshot(130000))}
    # node3's version is unknown, so it keeps every scope; 13 nodes are filtered out.
    wal = next(c for c in reset_choices(_snapshot(130000)) if c.scope.call == "pg_stat_reset_shared('wal')")
    assert [t.name for t in wal.nodes] == ["node3"]
    assert not any(c.startswith("pg_stat_reset_replication_slot") for c in calls)
