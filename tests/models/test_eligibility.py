"""Switchover/failover candidate eligibility judged from a snapshot."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pgtop_ha.judge.eligibility import takeover_plan
from pgtop_ha.models.snapshot import (
    ClusterInfo,
    ClusterSnapshot,
    Member,
    NodeSnapshot,
    PatroniConfig,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
MIB = 1024**2


def member(name: str, role: str = "replica", **kw: Any) -> Member:
    base: dict[str, Any] = {
        "state": "running" if role == "leader" else "streaming",
        "timeline": 3,
        "lag_bytes": None if role == "leader" else 0,
        "reachable": True,
    }
    base.update(kw)
    return Member(name=name, role=role, **base)


def snap(
    *members: Member,
    leader: str | None = "node1",
    max_lag: int | None = None,
    pause: bool | None = None,
    **cluster: Any,
) -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=T0,
        cluster=ClusterInfo(name="pgtop-lab", leader=leader, pause=pause, **cluster),
        members=members,
        patroni_config=PatroniConfig(maximum_lag_on_failover=max_lag),
    )


def test_healthy_replicas_are_eligible_and_least_lag_is_default() -> None:
    plan = takeover_plan(
        snap(member("node1", "leader"), member("node2", lag_bytes=5000), member("node3", lag_bytes=10))
    )
    assert plan.kind == "switchover"
    assert plan.leader == "node1"
    assert [c.name for c in plan.eligible] == ["node3", "node2"]
    assert plan.default == "node3"
    assert plan.candidate("node1") is None


def test_leader_found_by_role_when_cluster_has_no_leader_name() -> None:
    plan = takeover_plan(snap(member("node2"), member("node1", "leader"), leader=None))
    assert plan.leader == "node1"
    assert plan.default == "node2"


def test_lag_beyond_maximum_lag_on_failover_blocks() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader"),
            member("node2", lag_bytes=3 * MIB),
            member("node3", lag_bytes=MIB // 2),
            max_lag=MIB,
        )
    )
    node2 = plan.candidate("node2")
    assert node2 is not None and not node2.eligible
    assert "exceeds maximum_lag_on_failover 1.0 MiB" in node2.reasons[0]
    assert plan.default == "node3"


def test_default_maximum_lag_is_patronis_one_mib() -> None:
    s = ClusterSnapshot(
        taken_at=T0,
        cluster=ClusterInfo(leader="node1"),
        members=(member("node1", "leader"), member("node2", lag_bytes=2 * MIB)),
    )
    plan = takeover_plan(s)
    assert plan.maximum_lag_bytes == MIB
    assert plan.default is None
    assert "no eligible candidate: Patroni would answer 412" in plan.notes


def test_nofailover_tag_blocks_even_as_string_and_failover_priority_zero() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader"),
            member("node2", tags={"nofailover": "true"}),
            member("node3", tags={"failover_priority": 0}),
            member("node4", tags={"nofailover": False}),
        )
    )
    assert not plan.candidate("node2").eligible  # type: ignore[union-attr]
    assert not plan.candidate("node3").eligible  # type: ignore[union-attr]
    assert plan.default == "node4"


def test_failover_priority_positive_overrides_nofailover() -> None:
    plan = takeover_plan(
        snap(member("node1", "leader"), member("node2", tags={"nofailover": True, "failover_priority": 1}))
    )
    assert plan.default == "node2"


def test_state_and_timeline_and_reachability_block() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader", timeline=4),
            member("node2", state="starting", timeline=4),
            member("node3", timeline=3),
            member("node4", timeline=4, reachable=False, error="timeout"),
        )
    )
    by = {c.name: c for c in plan.candidates}
    assert by["node2"].reasons == ("state is starting, not streaming/running",)
    assert by["node3"].reasons == ("on timeline 3, the leader is on 4",)
    assert by["node4"].reasons == ("Patroni REST API not reachable: timeout",)
    assert plan.default is None


def test_warnings_rank_but_do_not_block() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader"),
            member("node2", pending_restart=True, lag_bytes=0),
            member("node3", tags={"nosync": True}, lag_bytes=100),
            member("node4", lag_bytes=200),
        )
    )
    assert all(c.eligible for c in plan.candidates)
    assert "pending restart" in plan.candidate("node2").warnings  # type: ignore[union-attr]
    assert plan.default == "node4"
    assert [c.name for c in plan.candidates] == ["node4", "node2", "node3"]


def test_synchronous_mode_prefers_and_requires_sync_standby() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader"),
            member("node2", lag_bytes=0),
            member("node3", "sync_standby", lag_bytes=50),
        )
    )
    assert plan.default == "node3"
    node2 = plan.candidate("node2")
    assert node2 is not None and not node2.eligible
    assert "synchronous mode" in node2.reasons[0]


def test_unknown_lag_is_a_warning() -> None:
    plan = takeover_plan(snap(member("node1", "leader"), member("node2", lag_bytes=None)))
    assert plan.default == "node2"
    assert "lag unknown" in plan.candidate("node2").warnings  # type: ignore[union-attr]


def test_no_leader_means_failover() -> None:
    plan = takeover_plan(snap(member("node2"), member("node3", lag_bytes=9), leader=None))
    assert plan.kind == "failover"
    assert plan.leader is None
    assert plan.default == "node2"
    assert any("no leader" in n for n in plan.notes)


def test_pause_and_scheduled_switchover_are_noted() -> None:
    plan = takeover_plan(
        snap(
            member("node1", "leader"),
            member("node2"),
            pause=True,
            scheduled_switchover={"at": "2025-01-01T10:00:00+00:00"},
        )
    )
    assert plan.paused
    assert any("maintenance mode" in n for n in plan.notes)
    assert any("2025-01-01T10:00:00+00:00" in n for n in plan.notes)


def test_postgres_view_adds_warnings() -> None:
    s = snap(member("node1", "leader"), member("node2"), member("node3", lag_bytes=5))
    s = s.model_copy(
        update={
            "nodes": (
                NodeSnapshot(name="node2", reachable=False),
                NodeSnapshot(name="node3", reachable=True, in_recovery=True),
            )
        }
    )
    plan = takeover_plan(s)
    assert "PostgreSQL not reachable from the console" in plan.candidate("node2").warnings  # type: ignore[union-attr]
    assert plan.default == "node3"


def test_a_member_not_in_patronis_cluster_is_no_candidate() -> None:
    # Shown by its configured URL (its Patroni stopped before the console started), or left /cluster
    # while its own /patroni still answers: Patroni cannot promote what it does not list.
    shown = Member(name="127.0.0.1:27622", unlisted=True, reachable=False, error="no answer")
    answering = Member(
        name="node3", own_state="running", reachable=True, timeline=3, lag_bytes=0, unlisted=True
    )
    plan = takeover_plan(snap(member("node1", "leader"), member("node2"), shown, answering))
    by = {c.name: c for c in plan.candidates}
    assert by["node3"].reasons == ("not in Patroni's /cluster: Patroni will not promote it",)
    assert by["127.0.0.1:27622"].reasons == ("not in Patroni's /cluster: Patroni will not promote it",)
    assert [c.name for c in plan.eligible] == ["node2"] and plan.default == "node2"
