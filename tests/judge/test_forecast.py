"""If the leader died now: the race as Patroni's ha.py runs it, each loser's reason, the verdicts."""

from __future__ import annotations

from pgtop_ha.judge.forecast import commit_waits_for, forecast, forecast_marks
from pgtop_ha.judge.judgement import judgement
from pgtop_ha.models.snapshot import ClusterSnapshot, PatroniConfig
from pgtop_ha.models.thresholds import Level
from tests.models.builders import healthy, member, node
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
MiB = 1024 * 1024


def _config(snap: ClusterSnapshot, **kw: object) -> ClusterSnapshot:
    config = (snap.patroni_config or PatroniConfig()).model_copy(update=kw)
    return snap.model_copy(update={"patroni_config": config})


def _reasons(snap: ClusterSnapshot) -> dict[str, str]:
    return {c.name: c.reason for c in forecast(snap).contenders}


def _behind(snap: ClusterSnapshot, name: str, by: int) -> ClusterSnapshot:
    """Member ``name`` ``by`` bytes behind the leader, as Patroni and its own PostgreSQL say."""
    lsn = snap.node("node1").current_lsn  # type: ignore[union-attr]
    assert lsn is not None
    snap = member(snap, name, lag_bytes=by)
    return node(snap, name, receive_lsn=lsn - by, replay_lsn=lsn - by)


def test_the_least_behind_wins_and_a_lagging_member_says_by_how_much() -> None:
    snap = _behind(_behind(healthy(), "node2", 1000), "node3", 12 * MiB + 400 * 1024)
    f = forecast(snap)
    assert f.winners == ("node2",) and f.mode == "async" and f.policy == "Patroni 4.1"
    assert _reasons(snap)["node3"] == "12.4 MiB behind > 1.0 MiB maximum_lag_on_failover"
    within = _behind(_behind(healthy(), "node2", 300_000), "node3", 1000)
    assert forecast(within).winners == ("node3",)
    assert _reasons(within)["node2"] == "behind node3 by 0.3 MiB"


def test_nofailover_and_failover_priority_take_a_member_out_or_break_a_tie() -> None:
    snap = member(healthy(), "node2", tags={"nofailover": True})
    assert forecast(snap).winners == ("node3",) and _reasons(snap)["node2"] == "nofailover"
    tie = member(healthy(), "node3", tags={"failover_priority": 2})
    assert forecast(tie).winners == ("node3",)
    assert _reasons(tie)["node2"] == "same position as node3, lower failover_priority"
    assert forecast(healthy()).winners == ("node2", "node3")  # a tie: whoever takes the key first


def test_synchronous_mode_lets_only_the_synchronous_standby_race() -> None:
    snap = _config(healthy(), synchronous_mode="on")
    f = forecast(snap)
    assert f.mode == "synchronous" and f.winners == ("node2",)
    assert _reasons(snap)["node3"] == "not synchronous: only the synchronous standby may take over"
    # Patroni 4.0 skips the priority tie-break in synchronous mode (but among quorum voters); 4.1
    # skips it only in quorum mode, outside the voters.
    prio = _config(member(healthy(), "node3", role="sync_standby", tags={"failover_priority": 3}),
                   synchronous_mode="on")  # fmt: skip
    assert forecast(prio).winners == ("node3",)
    old = prio
    for name in ("node1", "node2", "node3"):
        old = member(old, name, patroni_version="4.0.3")
    assert forecast(old).policy == "Patroni 4.0" and forecast(old).winners == ("node2", "node3")
    voters = _config(member(old, "node3", role="quorum_standby"), synchronous_mode="quorum")
    assert forecast(voters).mode == "quorum" and forecast(voters).winners == ("node3",)
    older = member(old, "node1", patroni_version="3.3.2")
    assert forecast(_config(older, synchronous_mode="quorum")).mode == "async"


def test_no_candidate_and_strict_mode_without_a_sync_standby_are_crit() -> None:
    snap = healthy()
    for name in ("node2", "node3"):
        snap = member(snap, name, tags={"nofailover": "true"})
    f = forecast(snap)
    assert f.winners == () and [m.rule for m in forecast_marks(snap, f, SETTINGS.thresholds)] == [
        "failover.no-candidate"
    ]
    verdicts = judgement(snap, SETTINGS.thresholds, POOLS, ()).verdicts
    assert [(v.rule, v.level) for v in verdicts if v.rule.startswith("failover.")] == [
        ("failover.no-candidate", Level.CRIT)
    ]
    strict = _config(member(healthy(), "node2", role="replica"), synchronous_mode="on",
                     synchronous_mode_strict=True)  # fmt: skip
    rules = [(m.rule, m.level) for m in forecast_marks(strict, forecast(strict), SETTINGS.thresholds)]
    assert ("failover.writes-blocked", Level.CRIT) in rules
    assert forecast_marks(healthy(), forecast(healthy()), SETTINGS.thresholds) == ()


def test_data_at_risk_is_the_winners_unflushed_wal_and_warns_past_lag_bytes() -> None:
    snap = healthy()
    primary = snap.node("node1")
    assert primary is not None
    senders = tuple(
        r.model_copy(update={"flush_lag_bytes": 40 * MiB, "flush_lag_s": 3.5}) for r in primary.replication
    )
    snap = node(snap, "node1", replication=senders)
    f = forecast(snap)
    assert {c.name: (c.at_risk_bytes, c.at_risk_s) for c in f.contenders} == {
        "node2": (40 * MiB, 3.5),
        "node3": (40 * MiB, 3.5),
    }
    marks = forecast_marks(snap, f, SETTINGS.thresholds)
    assert {(m.rule, m.level) for m in marks} == {("failover.data-at-risk", Level.WARN)}
    assert f.outage_min_s is not None and f.outage_max_s is not None and f.outage_min_s < f.outage_max_s


def test_synchronous_replication_is_said_as_it_is() -> None:
    assert commit_waits_for("ANY 1 (node2,node3)") == "any 1 of node2, node3 (quorum)"
    assert commit_waits_for("FIRST 2 (a, b, c)") == "the first 2 of a, b, c"
    assert commit_waits_for("*") == "any standby" and commit_waits_for("node2") == "node2"
    assert commit_waits_for("") == "none: commits are asynchronous" and commit_waits_for(None) is None
    snap = node(_config(healthy(), synchronous_mode="quorum", synchronous_mode_strict=True), "node1",
                synchronous_standby_names="ANY 1 (node2,node3)")  # fmt: skip
    f = forecast(snap)
    assert (f.mode, f.strict, f.commit_waits_for) == ("quorum", True, "any 1 of node2, node3 (quorum)")
    assert {c.name: c.sync_state for c in f.contenders} == {"node2": "sync", "node3": "async"}


def test_the_forecast_cites_this_clusters_past_outages() -> None:
    assert forecast(healthy()).past_outages_s is None  # one-shot: no timeline behind it
    assert forecast(healthy(), ()).past_outages_s == ()
    f = forecast(healthy(), [float(s) for s in range(1, 9)])
    assert f.past_outages_s == (4.0, 5.0, 6.0, 7.0, 8.0)
    assert any("writes stopped 4.0, 5.0, 6.0, 7.0, 8.0 s" in a for a in f.assumptions)


def test_without_postgresql_the_race_is_run_on_patronis_lag() -> None:
    snap = member(member(healthy(), "node2", lag_bytes=4096), "node3", lag_bytes=0)
    f = forecast(snap.model_copy(update={"nodes": ()}))
    assert f.winners == ("node3",) and f.leader_position is None
    node2 = next(c for c in f.contenders if c.name == "node2")
    assert node2.reason == "behind node3 by 0.0 MiB" and node2.position is None
    assert any("Patroni's lag" in a for a in f.assumptions)
