"""Patroni's word on a member's state, as check_patroni's expectations read it."""

from __future__ import annotations

from pgtop_ha.judge.judgement import judgement
from pgtop_ha.judge.rules import PATRONI_STATE
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from tests.models.builders import healthy, member
from tests.ui import fixtures as fx

POOLS = fx.settings().haproxy.pools()


def _state_levels(snap: ClusterSnapshot) -> dict[str | None, Level]:
    verdicts = judgement(snap, fx.settings().thresholds, POOLS).verdicts
    return {v.subject: v.level for v in verdicts if v.rule == PATRONI_STATE.id}


def test_a_replica_in_archive_recovery_is_healthy_a_standby_leader_is_not() -> None:
    replica = member(healthy(1), "node3", state="in archive recovery")
    assert _state_levels(replica) == {}
    standby_leader = member(
        member(healthy(1), "node1", role="standby_leader", state="in archive recovery"),
        "node3",
        state="stopped",
    )
    assert _state_levels(standby_leader) == {"node1": Level.WARN, "node3": Level.CRIT}
