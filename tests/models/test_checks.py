"""Disagreement checks: each one from a snapshot, its grace period, how long it lasted, its events."""

from __future__ import annotations

from datetime import timedelta

from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.checks import disagreements, writes_ok
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.judge.slots import worst_slot
from pgtop_ha.models.snapshot import ClusterSnapshot, WalReceiver
from pgtop_ha.models.thresholds import Thresholds
from pgtop_ha.ui.panes import overview
from pgtop_ha.ui.panes.base import Context
from tests.models.builders import feed, healthy, leader, member, node, only, pg_down, t, writers
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()


def keys(snap: ClusterSnapshot) -> list[str]:
    return [c.key for c in disagreements(snap, POOLS)]


def test_healthy_cluster_has_none() -> None:
    assert keys(healthy()) == []
    assert writes_ok(healthy(), POOLS) is True


def test_two_members_not_in_recovery() -> None:
    snap = node(healthy(), "node3", in_recovery=False)
    (check,) = disagreements(snap, POOLS)[:1]
    assert check.key == "primaries" and check.text == "2 members not in recovery: node1, node3"
    assert check.level == 2 and check.grace_s == 0
    # A kept (slow) answer proves nothing about now.
    assert "primaries" not in keys(node(snap, "node3", slow_s=3.0))


def test_writer_pool_to_none_or_to_a_non_leader() -> None:
    none = disagreements(writers(healthy()), POOLS)
    assert [(c.key, c.text) for c in none] == [("writer:none", "HAProxy writer pool routes to no server")]
    assert writes_ok(writers(healthy()), POOLS) is False
    wrong = disagreements(writers(healthy(), "node1", "node3"), POOLS)
    assert [(c.key, c.text) for c in wrong] == [
        ("writer:wrong", "HAProxy writer pool routes to node3, not the leader node1")
    ]
    lost = disagreements(leader(healthy(), None), POOLS)
    assert [c.text for c in lost if c.key.startswith("writer")] == [
        "HAProxy writer pool routes to node1, and there is no leader"
    ]
    # No HAProxy data: nothing to say about routing.
    bare = healthy().model_copy(update={"haproxy": healthy().haproxy.model_copy(update={"servers": ()})})
    assert keys(bare) == [] and writes_ok(bare, POOLS) is None


def _sessions(snap: ClusterSnapshot, **totals: int) -> ClusterSnapshot:
    servers = tuple(
        s.model_copy(update={"selected_total": totals.get(s.server, 0)}) if s.proxy == "pg_writer" else s
        for s in snap.haproxy.servers
    )
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})


def test_writes_land_on_the_leader_while_another_server_is_still_up() -> None:
    # `balance first` with the new leader first: every new connection goes to it while the demoted
    # server's checks still pass; a client's writes succeed from then.
    both = writers(healthy(), "node1", "node2")
    prev = _sessions(both, node1=10, node2=50)
    assert writes_ok(_sessions(both, node1=13, node2=50), POOLS, prev) is True
    assert writes_ok(_sessions(both, node1=13, node2=50), POOLS) is False  # no counts to go by
    assert writes_ok(_sessions(both, node1=12, node2=51), POOLS, prev) is False  # shared: roundrobin
    assert writes_ok(_sessions(both, node1=11, node2=50), POOLS, prev) is False  # one is no evidence
    assert writes_ok(_sessions(both, node1=0, node2=0), POOLS, prev) is False  # HAProxy restarted
    # Only ever the leader: a demoted server that took the writes is no route to the leader.
    assert writes_ok(_sessions(both, node1=10, node2=53), POOLS, prev) is False


def test_role_against_recovery_beyond_grace() -> None:
    snap = node(healthy(), "node1", in_recovery=True)
    (check,) = [c for c in disagreements(snap, POOLS) if c.key == "role:node1"]
    assert check.text == "node1: Patroni says leader, PostgreSQL is in recovery" and check.grace_s == 10.0
    other = node(healthy(), "node2", in_recovery=False)
    texts = [c.text for c in disagreements(other, POOLS)]
    assert "node2: PostgreSQL is primary, Patroni says sync_standby" in texts
    # Within the grace period it is normal (a switchover); beyond it, a banner line and an event.
    tl = Timeline()
    feed(tl, [healthy(0)] + [node(healthy(i), "node1", in_recovery=True) for i in range(1, 11)])
    assert tl.checks() == [] and not any(e.kind == "check" for e in tl.events())
    feed(tl, [node(healthy(11), "node1", in_recovery=True)])
    (active,) = tl.checks()
    assert active.check.key == "role:node1" and active.since == t(1) and active.lasted_s(t(12)) == 11.0
    event = only(tl, "node1: Patroni says leader, PostgreSQL is in recovery")
    assert event.at == t(11) and event.kind == "check" and event.source == "console"
    feed(tl, [healthy(20)])
    assert tl.checks() == []
    lasted = only(tl, "node1: Patroni says leader, PostgreSQL is in recovery").duration_s
    assert lasted == 19.0  # since first seen, grace included
    assert only(tl, "resolved: node1: Patroni says leader").severity == 0


def test_flicker_within_grace_raises_nothing() -> None:
    tl = Timeline()
    flicker = [node(healthy(i), "node1", in_recovery=True) if i % 3 else healthy(i) for i in range(30)]
    feed(tl, flicker)
    assert not any(e.kind == "check" for e in tl.events())


def test_timelines_diverging() -> None:
    snap = node(healthy(), "node3", timeline=4)
    (check,) = disagreements(snap, POOLS)
    assert check.key == "timelines" and check.text == "timelines differ: node1 3, node2 3, node3 4"
    assert check.grace_s == 10.0 and check.level == 1


def test_dcs_last_seen_stale() -> None:
    at = t(0)
    fresh = member(healthy(), "node2", dcs_last_seen=int(at.timestamp()) - 8)
    assert keys(fresh) == []
    stale = member(healthy(), "node2", dcs_last_seen=int(at.timestamp()) - 25)
    (check,) = disagreements(stale, POOLS)
    assert check.key == "dcs:node2" and check.text == "node2: Patroni has not reached the DCS for over 20 s"
    # Judged at the time of the answer: a slow member's kept answer does not go stale by waiting.
    kept = member(healthy(30), "node2", slow_s=20.0, last_ok_at=at, dcs_last_seen=int(at.timestamp()) - 8)
    assert keys(kept) == []


def test_leader_pg_down_while_haproxy_routes_writes_to_it() -> None:
    snap = fx.kill_primary()
    (check,) = disagreements(snap, POOLS)
    assert check.key == "pg-down-routed:node1"
    assert check.text == "node1: PostgreSQL down on the leader, HAProxy still routes writes to it"
    # The problem it always raised is kept.
    problems = cluster_problems(snap, SETTINGS.thresholds, POOLS, snap.taken_at)
    assert problems[0].text == "PG DOWN, still routed (Patroni leader, HAProxy writer UP)"
    assert keys(writers(pg_down(healthy(), "node1"))) == ["writer:none"]


def test_checks_are_events_with_how_long_they_lasted() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), writers(healthy(1)), writers(healthy(2))])
    (active,) = tl.checks()
    assert active.since == t(1) and active.lasted_s(t(2) + timedelta(seconds=0.5)) == 1.5
    feed(tl, [writers(healthy(30), "node1", "node2")])
    assert only(tl, "HAProxy writer pool routes to no server").duration_s == 29.0
    assert only(tl, "routes to node2, not the leader node1").at == t(30)


def test_a_disagreement_present_from_the_start_is_an_event() -> None:
    tl = Timeline()
    assert [e.kind for e in tl.observe(writers(healthy(0)))] == ["check"]  # the rest is the baseline
    feed(tl, [healthy(1)])
    first = only(tl, "HAProxy writer pool routes to no server")
    assert first.at == t(0) and first.duration_s == 1.0


def test_the_worst_slot_is_the_one_nearest_to_losing_wal_when_bytes_tie() -> None:
    # Patroni's copies of a permanent slot retain the same bytes on every member: the leader's
    # "extended" (past max_wal_size) lost to a standby's "reserved" because "node3" > "node1".
    snap = healthy()
    gib = 2 * 1024**3

    def slots(status: str) -> dict[str, object]:
        n = snap.node("node1")
        assert n is not None
        return {
            "slots": tuple(
                s.model_copy(update={"retained_bytes": gib, "wal_status": status}) for s in n.slots
            )
        }

    snap = node(
        node(node(snap, "node1", **slots("extended")), "node2", **slots("reserved")),
        "node3",
        **slots("reserved"),
    )
    found = worst_slot(snap, fx.settings().thresholds)
    assert found is not None
    where, slot, _ = found
    assert (where, slot.wal_status) == ("node1", "extended")
    snap = node(snap, "node2", **slots("unreserved"))
    found = worst_slot(snap, fx.settings().thresholds)
    assert found is not None and found[0] == "node2"


def test_the_worst_slot_on_a_full_tie_is_the_primarys_not_a_copys() -> None:
    # Read on the lab: the permanent slot's copies retained 337 MiB, reserved, on every member,
    # and the overview said "lab_sub on node3" (the last name) of a replica's copy.
    snap = healthy()
    leader = next(n.name for n in snap.nodes if n.in_recovery is False)
    n = snap.node(leader)
    assert n is not None and leader != max(x.name for x in snap.nodes)
    same = tuple(
        s.model_copy(update={"retained_bytes": 337 * 2**20, "wal_status": "reserved"}) for s in n.slots
    )
    for name in [x.name for x in snap.nodes]:
        snap = node(snap, name, slots=same)
    found = worst_slot(snap, fx.settings().thresholds)
    assert found is not None and found[0] == leader


def test_a_standby_without_wal_receiver_is_on_patronis_timeline_not_its_last_restartpoints() -> None:
    # Read after a switchover then a crash of the new leader: node1, a replica on timeline 5 for
    # minutes, lost its WAL receiver; its last restartpoint was still on 4, and the overview read
    # "timelines differ: node1 4, node2 5" and "Timeline 5 — node1 on 4" of a replica on 5.
    snap = healthy()
    for name in ("node1", "node2", "node3"):
        snap = member(node(snap, name, timeline=5), name, timeline=5)
    snap = node(snap, "node3", timeline=4)  # pg_control_checkpoint(): its last restartpoint
    assert keys(snap) == []
    ctx = Context(thresholds=Thresholds(), pools=POOLS, now=t(0))
    (row,) = [r for r in overview.state_rows(snap, ctx) if r.key == "tl"]
    assert row.cells["now"].text == "5 (leader node1)"
    # Patroni's own word (IDENTIFY_SYSTEM on the replica) says 4: it is stuck there.
    stuck = member(snap, "node3", timeline=4)
    (check,) = disagreements(stuck, POOLS)
    assert check.text == "timelines differ: node1 5, node2 5, node3 4"
    # A WAL receiver's timeline is exact, whatever its restartpoint says.
    receiving = node(stuck, "node3", wal_receiver=WalReceiver(status="streaming", received_tli=5))
    assert keys(receiving) == []
