"""What Patroni says is planned or unusual, judged; and its /history told at start."""

from __future__ import annotations

from datetime import timedelta

from pgtop_ha.collect.patroni import parse_cluster, parse_patroni
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.problems import banner_notes, cluster_problems, upstream_mismatch
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.snapshot import ClusterSnapshot, HistoryEntry, WalReceiver
from pgtop_ha.ui.widgets.banner import banner_text
from tests.ui import fixtures as fx

POOLS = Pools(("pg_writer",), ("pg_reader",))


def _rules(snap: ClusterSnapshot) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in cluster_problems(snap, fx.settings().thresholds, POOLS, snap.taken_at):
        out.setdefault(p.rule, []).append(p.text)
    return out


def _members(snap: ClusterSnapshot, name: str, **update: object) -> ClusterSnapshot:
    members = tuple(m.model_copy(update=update) if m.name == name else m for m in snap.members)
    return snap.model_copy(update={"members": members})


def test_failsafe_versions_and_schedules_are_verdicts() -> None:
    snap = fx.healthy()
    assert not {"patroni.failsafe", "patroni.versions", "patroni.scheduled"} & set(_rules(snap))
    snap = _members(snap, "node1", failsafe_active=True, patroni_version="4.1.5")
    snap = _members(
        snap, "node2", patroni_version="4.0.7", scheduled_restart={"schedule": "2025-01-02T04:00"}
    )
    snap = snap.model_copy(
        update={
            "cluster": snap.cluster.model_copy(
                update={"scheduled_switchover": {"at": "04:30", "to": "node3"}}
            )
        }
    )
    rules = _rules(snap)
    assert rules["patroni.failsafe"] == [
        "failsafe mode active: the DCS is unreachable, the leader keeps running on its members' word"
    ]
    assert rules["patroni.versions"] == ["Patroni versions differ (4.0.7, 4.1.5): an upgrade in progress?"]
    assert sorted(rules["patroni.scheduled"]) == [
        "restart scheduled at 2025-01-02T04:00",
        "switchover scheduled at 04:30 to node3",
    ]


def test_patroni_answers_carry_failsafe_and_scheduled_restart() -> None:
    own = parse_patroni({"role": "primary", "state": "running", "failsafe_mode_is_active": True})
    assert own.failsafe_active is True
    view = parse_cluster(
        {"members": [{"name": "a", "role": "leader", "scheduled_restart": {"schedule": "2025-01-02T04:00"}}]}
    )
    assert view.members[0].scheduled_restart == {"schedule": "2025-01-02T04:00"}


def test_history_before_the_console_is_told_once_at_its_own_time() -> None:
    first = fx.healthy()
    past = first.taken_at - timedelta(hours=2)
    history = (
        HistoryEntry(timeline=2, lsn=100, reason="no recovery target specified", timestamp=past.isoformat(),
                     new_leader="node1"),
        HistoryEntry(timeline=3, lsn=200, timestamp="not a time"),
    )  # fmt: skip
    timeline = Timeline(pools=POOLS)
    told = [e for e in timeline.observe(first.model_copy(update={"history": history})) if e.kind == "history"]
    assert [(e.at, e.text, e.node) for e in told] == [
        (past, "timeline 2 → 3 (no recovery target specified; new leader node1), from /history", "node1")
    ]
    again = fx.healthy(first.taken_at + timedelta(seconds=1)).model_copy(update={"history": history})
    assert not [e for e in timeline.observe(again) if e.kind == "history"]


def test_the_banner_keeps_what_the_operator_must_not_forget() -> None:
    snap = fx.healthy()
    assert banner_notes(snap) == ()
    planned = {"pause": True, "scheduled_switchover": {"at": "04:30"}}
    snap = _members(snap.model_copy(update={"cluster": snap.cluster.model_copy(update=planned)}), "node2",
                    scheduled_restart={"schedule": "05:00"})  # fmt: skip
    notes = banner_notes(snap)
    assert notes == (
        "cluster in maintenance mode (paused)",
        "switchover scheduled at 04:30",
        "node2: restart scheduled at 05:00",
    )
    text = banner_text((), None, snap.taken_at, {}, notes=notes).plain
    assert "⏲ cluster in maintenance mode (paused)" in text and "⏲ node2: restart scheduled at 05:00" in text


def test_a_standby_off_its_replicatefrom_is_a_verdict() -> None:
    base = fx.healthy()
    # Each standby streams from node1's port (25410), the leader.
    receiver = WalReceiver(status="streaming", sender_host="127.0.0.1", sender_port=25410)
    nodes = tuple(n.model_copy(update={"wal_receiver": receiver}) if n.in_recovery else n for n in base.nodes)
    base = base.model_copy(update={"nodes": nodes})
    snap = _members(base, "node3", tags={"replicatefrom": "node2"})
    # node3 streams from the leader (node1) though its tag names node2: Patroni fell back.
    assert upstream_mismatch(snap, "node3") == "streams from node1, not from node2 (its replicatefrom)"
    assert "replication.upstream" in _rules(snap)
    assert upstream_mismatch(base, "node3") is None
