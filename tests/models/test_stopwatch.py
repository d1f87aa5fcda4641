"""The failover stopwatch: election, write outage, lag at promotion, replicas, permanent slots."""

from __future__ import annotations

import re
from datetime import datetime

from pgtop_ha.engines.stopwatch import LeaderSilence, lost_seconds, past_outages, summary
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.models.probe import WriteOutage
from pgtop_ha.models.snapshot import ClusterSnapshot, HistoryEntry, Probe, WalReceiver
from pgtop_ha.models.thresholds import Thresholds
from pgtop_ha.ui.panes import overview
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.widgets.banner import banner_text, silence_text, stopwatch_text
from tests.models.builders import feed, healthy, leader, member, node, only, pg_down, rest_down, t, writers

L = 0x5000000  # the old leader's last LSN seen while it was primary


def _before(s: float) -> ClusterSnapshot:
    snap = node(healthy(s), "node1", current_lsn=L)
    for name in ("node2", "node3"):
        snap = node(snap, name, receive_lsn=L - 1000, replay_lsn=L - 1200)
    return snap


def _after(
    s: float,
    *,
    node1_back: bool = False,
    node3_tl: int = 4,
    writer: tuple[str, ...] = (),
    node1_state: str = "running",
) -> ClusterSnapshot:
    """node2 leads on timeline 4; node1 down unless back; the writer pool as given.

    node1's member key keeps the last state its Patroni wrote (a crash: "running") until it expires.
    """
    snap = healthy(s, leader="node2")
    snap = node(snap, "node2", timeline=4, current_lsn=L + 4096)
    streaming = WalReceiver(status="streaming", received_tli=4)
    snap = node(snap, "node3", timeline=node3_tl, wal_receiver=streaming if node3_tl == 4 else None)
    if node3_tl != 4:
        snap = member(snap, "node3", state="running")  # Patroni: not streaming yet
    if node1_back:
        snap = node(snap, "node1", timeline=4, wal_receiver=streaming)
    else:
        snap = rest_down(pg_down(snap, "node1"), "node1")
        snap = member(snap, "node1", state=node1_state)
    return writers(snap, *writer)


def _failover() -> list[ClusterSnapshot]:
    return [
        _before(0),
        pg_down(_before(1), "node1"),  # the leader's postmaster dies; HAProxy still routes to it
        writers(leader(pg_down(_before(3), "node1"), None), "node1"),  # leader key gone
        _after(5),  # node2 promoted; HAProxy routes writes to no one
        _after(6).model_copy(
            update={"history": (HistoryEntry(timeline=3, lsn=L - 500, new_leader="node2"),)}
        ),
        _after(8, writer=("node2",)),  # HAProxy's writer pool follows
        _after(10, writer=("node2",)),
        _after(14, writer=("node2",), node1_back=True),  # the old leader rejoins as a replica
    ]


def test_failover_stopwatch_figures() -> None:
    tl = Timeline()
    feed(tl, _failover())
    (r,) = tl.failovers()
    assert r.lost_at == t(3) and r.old_leader == "node1" and r.new_leader == "node2"
    assert r.elected_at == t(5) and r.election_s == 2.0
    # Timed from the leader going silent (its PostgreSQL at t1), not only from the key's release.
    assert r.leader_down_at == t(1) and r.down_to_elected_s == 4.0
    # Writes went to a non-leader (node1, leader key gone) from t3, to no one, then to node2 at t8.
    assert (r.write_outage_from, r.write_outage_to, r.write_outage_s) == (t(1), t(8), 7.0)
    # Exact from /history once it came: the old timeline ended 500 bytes before the last LSN seen.
    assert r.old_leader_lsn == L and r.promotion_lsn == L - 500 and r.lag_at_promotion_bytes == 500
    assert r.old_timeline == 3 and r.new_timeline == 4
    assert r.replicas_streaming_at == t(14) and r.replicas_streaming_s == 11.0
    assert r.permanent_slots_ok is True and r.missing_slots == ()
    assert r.done and r.ended_at == t(14)
    assert tl.running_failover() is None
    # node1 wrote 500 bytes past the fork: it follows node2 again only once rewound.
    assert (r.old_leader_back, r.old_leader_back_at) == ("pg_rewind", t(14))
    assert only(tl, "node1 back as a replica of node2, by pg_rewind, 11.0 s after the loss").at == t(14)


def test_the_wal_lost_is_dated_by_the_old_leaders_readings() -> None:
    tl = Timeline()
    writing = [node(healthy(s), "node1", current_lsn=L - 2000 + 500 * (s + 4)) for s in (-4, -2)]
    feed(tl, [*writing, *_failover()])
    (r,) = tl.failovers()
    # The fork (L - 500) lies halfway between the readings at t-2 (L - 1000) and t0 (L).
    assert r.lag_at_promotion_bytes == 500 and r.lag_at_promotion_s == 1.0
    assert "lag at promotion 500 B (its last 1.0 s of writes or more)" in summary(r)


def test_a_finished_failover_is_a_past_outage_of_the_next_forecast() -> None:
    tl = Timeline()
    feed(tl, _failover())
    assert past_outages(tl.failovers()) == (7.0,)
    ctx = Context(thresholds=Thresholds(), pools=tl.pools, now=t(20), outages=past_outages(tl.failovers()))
    assert ctx.forecast(_after(20, writer=("node2",))).past_outages_s == (7.0,)


def test_wal_lost_before_the_readings_began_is_not_dated() -> None:
    trail = [(t(0), 1000), (t(1), 2000)]
    assert lost_seconds(trail, 500) is None and lost_seconds(trail, 2000) is None
    assert lost_seconds(trail, 1500) == 0.5 and lost_seconds([], 1) is None


def test_an_old_leader_copied_anew_came_back_by_reinit() -> None:
    snaps = _failover()
    snaps[-2] = member(snaps[-2], "node1", state="creating replica")
    tl = Timeline()
    feed(tl, snaps)
    (r,) = tl.failovers()
    assert r.old_leader_back == "reinit"
    tl2 = Timeline()
    feed(tl2, _failover()[:-1])
    assert tl2.failovers()[0].old_leader_back is None  # not back yet


def test_failover_is_kept_in_the_timeline_as_events() -> None:
    tl = Timeline()
    seen: list[int] = []
    for snap in _failover():
        seen += [e.id for e in tl.observe(snap) if e.kind == "failover" and e.text.startswith("failover ")]
    summaries = [e for e in tl.events() if e.kind == "failover" and e.text.startswith("failover ")]
    assert len(summaries) == 1 and len(set(seen)) == 1  # one event, updated as figures arrived
    (s,) = summaries
    assert s.at == t(3) and s.ended_at == t(14) and s.duration_s == 11.0 and s.severity == 0
    assert s.text == summary(tl.failovers()[0])
    assert s.text == (
        "failover node1 → node2: election 2.0 s (4.0 s after node1 stopped answering), "
        "write outage 7.0 s, lag at promotion 500 B, "
        "replicas streaming 11.0 s, permanent slots ok"
    )
    text = "new leader node2 4.0 s after node1 stopped answering, 2.0 s after it lost the leader key"
    assert only(tl, text).at == t(5)
    assert only(tl, "write outage 7.0 s: HAProxy routes writes to the leader node2 again").at == t(8)
    assert only(tl, "all replicas stream from node2 11.0 s after the loss (timeline 4)").at == t(14)
    assert only(tl, "every permanent logical slot exists on the new leader node2").severity == 0


def test_each_milestone_keeps_its_first_figure_in_the_overview_at_80_columns() -> None:
    # The overview gives an event's text what 80 columns leave beside the Node column: after a
    # crash of the leader it read "writes through HAProxy reach the leader node2 again: outag…".
    tl = Timeline()
    snaps = _failover()
    feed(tl, snaps)
    said = [e for e in tl.events() if e.kind == "failover" and not e.text.startswith("failover ")]
    figures = {e.id: m.group(0) for e in said if (m := re.search(r"\d+\.\d s", e.text))}
    assert len(figures) >= 3  # the election, the write outage, the replicas
    ctx = Context(thresholds=Thresholds(), pools=tl.pools, now=t(20), events=tuple(said))
    shown = {row.key: row.cells["text"].text for row in overview.event_rows(snaps[-1], ctx)}
    for event_id, figure in figures.items():
        assert figure in shown[f"#{event_id}"], shown[f"#{event_id}"]


def test_lag_before_history_is_the_last_replay_position_seen() -> None:
    tl = Timeline()
    feed(tl, _failover()[:4])
    r = tl.running_failover()
    assert r is not None and not r.done
    assert r.promotion_lsn == L - 1000 and r.lag_at_promotion_bytes == 1000
    assert r.write_outage_to is None and r.replicas_streaming_at is None
    assert "write outage running" in summary(r) and "replicas streaming running" in summary(r)


def test_switchover_seen_in_one_poll() -> None:
    tl = Timeline()
    after = healthy(1, leader="node2")
    for name in ("node1", "node2", "node3"):
        after = node(after, name, timeline=4)
    feed(tl, [_before(0), after])
    (r,) = tl.failovers()
    assert r.election_s == 0.0 and r.new_leader == "node2"
    assert r.write_outage_from is None and r.replicas_streaming_s == 0.0 and r.done
    assert "write outage not seen" in summary(r)


def test_missing_permanent_slot_on_the_new_leader() -> None:
    snaps = _failover()
    snaps[3] = node(snaps[3], "node2", slots=())
    tl = Timeline()
    feed(tl, snaps[:4])
    r = tl.running_failover()
    assert r is not None and r.permanent_slots_ok is False and r.missing_slots == ("lab_sub",)
    assert only(tl, "permanent logical slots missing on the new leader node2: lab_sub").severity == 2
    feed(tl, snaps[4:])
    (done,) = tl.failovers()
    assert done.permanent_slots_ok is True  # Patroni created it a second later


def test_no_loss_no_report_and_a_second_loss_closes_the_first() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), pg_down(healthy(1), "node1"), healthy(2)])
    # A crashed postmaster restarted by Patroni is no leader loss, but a write outage of its own.
    (kept,) = tl.failovers()
    assert kept.leader_kept and kept.write_outage_s == 1.0 and kept.new_leader == "node1"
    feed(tl, [leader(healthy(3), None), healthy(4, leader="node2"), leader(healthy(5, leader="node2"), None)])
    _, first, second = tl.failovers()
    assert first.done and first.ended_at == t(5) and first.old_leader == "node1"
    assert second.old_leader == "node2" and not second.done


def test_a_member_gone_from_cluster_is_no_replica_to_wait_for() -> None:
    snaps = _failover()[:7]
    # node1's member key expired (a crashed host): the poller still shows it, bare, a while.
    snaps[6] = member(
        snaps[6], "node1", role=None, state=None, error="not listed by Patroni's /cluster any more"
    )
    tl = Timeline()
    feed(tl, snaps)
    (r,) = tl.failovers()
    assert r.replicas_streaming_at == t(10) and r.done
    assert only(tl, "member left").node == "node1"
    assert not any("Patroni role" in e.text and "None" in e.text for e in tl.events())


# -- the write probe's outage (issue 11): what a client saw, beside HAProxy's routing -------------


def _outage(a: float, b: float) -> WriteOutage:
    return WriteOutage(started_at=t(a), ended_at=t(b), duration_s=b - a, member="node2", failures=3)


def _probes(
    snap: ClusterSnapshot, *outages: WriteOutage, failing_since: datetime | None = None, kind: str = "write"
) -> ClusterSnapshot:
    errors = 2 if failing_since is not None else 0
    probe = Probe(endpoint="writer", kind=kind, errors=errors, first_error_at=failing_since, outages=outages)
    return snap.model_copy(update={"probes": (probe,)})


def _probed_failover() -> list[ClusterSnapshot]:
    """The failover above with a write probe: failing from t1.5, writing again on node2 at t7.5."""
    earlier = _outage(-60, -55)  # an old blip, long before the failover: not this failover's
    snaps = _failover()
    out = [_probes(s, earlier) for s in snaps[:2]]
    out += [_probes(s, earlier, failing_since=t(1.5)) for s in snaps[2:5]]
    return out + [_probes(s, earlier, _outage(1.5, 7.5)) for s in snaps[5:]]


def test_write_probe_outage_is_the_client_figure_while_running_and_final() -> None:
    tl = Timeline()
    snaps = _probed_failover()
    feed(tl, snaps[:4])
    r = tl.running_failover()
    assert r is not None
    # Writes still fail: from the probe's first failure, counting up, no end yet.
    assert (r.client_write_outage_from, r.client_write_outage_to, r.client_write_outage_s) == (
        t(1.5),
        None,
        None,
    )
    assert "client writes down running" in summary(r)
    assert "client writes down 3 s…" in stopwatch_text(r, t(4.5))
    feed(tl, snaps[4:])
    (done,) = tl.failovers()
    assert (done.client_write_outage_from, done.client_write_outage_to) == (t(1.5), t(7.5))
    assert done.client_write_outage_s == 6.0
    # HAProxy's figure is unchanged beside it.
    assert done.write_outage_s == 7.0 and done.done
    assert "write outage 7.0 s, client writes down 6.0 s, lag at promotion" in summary(done)
    assert "client writes down 6.0 s" in stopwatch_text(done, t(15))
    # At 80 columns the full line cut the outage figures: the compact one keeps them all.
    compact = stopwatch_text(done, t(15), names=["node1", "node2", "node3"], compact=True)
    assert compact.startswith("⏱ node1 → node2 · elected ")
    assert "writes down 7.0s · clients down 6.0 s · lag " in compact
    # Still longer than 80: the banner breaks it once, and every figure is on screen.
    names = ["node1", "node2", "node3"]
    lines = banner_text([], done, t(15), {}, names=names, width=80).plain.split("\n")
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith(" ⏱ node1 → node2 · elected ") and lines[1].endswith("slots ok ")
    assert banner_text([], done, t(15), {}, names=names, width=200).plain.count("\n") == 0
    assert only(tl, "client writes down 6.0 s: the write probe writes again").at == t(7.5)
    (s,) = [e for e in tl.events() if e.kind == "failover" and e.text.startswith("failover ")]
    assert s.text == summary(done)


def test_client_outage_ending_after_the_report_closed_still_counts() -> None:
    tl = Timeline()
    snaps = _failover()
    snaps = [_probes(s) for s in snaps[:2]] + [_probes(s, failing_since=t(2)) for s in snaps[2:]]
    feed(tl, snaps)
    assert tl.failovers()[0].done and tl.failovers()[0].client_write_outage_to is None
    # The probe writes again after the HAProxy figures were complete: the report still takes it.
    feed(tl, [_probes(_after(16, writer=("node2",), node1_back=True), _outage(2, 15))])
    (r,) = tl.failovers()
    assert (r.client_write_outage_from, r.client_write_outage_to, r.client_write_outage_s) == (
        t(2),
        t(15),
        13.0,
    )


def test_no_write_probe_or_unrelated_outages_leave_the_client_figure_empty() -> None:
    for wrap in (
        lambda s: s,  # no probe configured (read-only mode)
        lambda s: _probes(s, _outage(1.5, 7.5), kind="writer"),  # a read probe's errors are no write outage
        lambda s: _probes(s, _outage(-60, -55), _outage(30, 31)),  # before and after the failover
    ):
        tl = Timeline()
        feed(tl, [wrap(s) for s in _failover()])
        (r,) = tl.failovers()
        assert r.client_write_outage_from is None and r.client_write_outage_s is None
        assert "client" not in summary(r) and "client" not in stopwatch_text(r, t(15))


def _silent(s: float, *, pg: bool = True) -> ClusterSnapshot:
    """node1, the leader Patroni still names, with its REST (and PostgreSQL) not answering."""
    snap = rest_down(_before(s), "node1")
    return pg_down(snap, "node1") if pg else snap


def _crash() -> list[ClusterSnapshot]:
    """A power cut of the leader at t1; HAProxy's checks fail at t3; Patroni's key still names it."""
    return [_before(0), _silent(1), writers(_silent(3)), writers(_silent(10))]


def test_the_stopwatch_runs_from_the_leaders_silence_before_patroni_names_another() -> None:
    # After `lab fault crash` of the leader, the banner said only "HAProxy writer pool routes to
    # no server (10s)" for the 18 s until the key lapsed; the stopwatch began at the election.
    tl = Timeline()
    feed(tl, _crash())
    s = tl.leader_silence()
    assert s is not None and tl.running_failover() is None
    assert (s.leader, s.since, s.rest_since, s.pg_down) == ("node1", t(1), t(1), True)
    assert (s.ttl_s, s.paused, s.writes_down_since) == (30, False, t(1))
    assert stopwatch_silence(s, t(10)) == "⏱ leader node1 silent 9s · key lapses ≤21s · writes down 9s…"
    assert stopwatch_silence(s, t(10), compact=False) == (
        "⏱ leader node1 silent 9s: Patroni and PostgreSQL unreachable · "
        "its leader key lapses within 21s (ttl 30s) · writes down 9s…"
    )
    # Past the ttl Patroni still names it: a partition from here, or no replica may take over.
    assert "· 9s past ttl 30s ·" in stopwatch_silence(s, t(40))
    # Patroni names another: the failover's own stopwatch takes over, timed from the silence.
    feed(tl, [_after(19)])
    assert tl.leader_silence() is None
    (r,) = tl.failovers()
    assert r.leader_down_at == t(1) and r.down_to_elected_s == 18.0


def test_no_silence_while_the_leaders_patroni_answers_or_once_it_answers_again() -> None:
    tl = Timeline()
    # kill -9 of the postmaster: Patroni answers, restarts it in place and keeps the key.
    feed(tl, [_before(0), pg_down(_before(1), "node1"), pg_down(_before(2), "node1")])
    assert tl.leader_silence() is None
    feed(tl, [_silent(3, pg=False)])  # its REST stops too: silent since its PostgreSQL did
    s = tl.leader_silence()
    assert s is not None and (s.since, s.rest_since, s.pg_down) == (t(1), t(3), False)
    # The ttl counts from the REST's silence: its last renewal came before that, not before t1.
    assert stopwatch_silence(s, t(5)) == "⏱ leader node1 REST down 4s · key lapses ≤28s"
    feed(tl, [_before(6)])
    assert tl.leader_silence() is None and [r.leader_kept for r in tl.failovers()] == [True]


def test_a_paused_cluster_says_no_failover_follows() -> None:
    tl = Timeline()
    paused = [
        snap.model_copy(update={"cluster": snap.cluster.model_copy(update={"pause": True})})
        for snap in _crash()
    ]
    feed(tl, paused)
    s = tl.leader_silence()
    assert s is not None and s.paused
    assert "· paused: no failover ·" in stopwatch_silence(s, t(10))
    assert "key" not in stopwatch_silence(s, t(10))


def test_at_80_columns_the_silence_and_the_problems_each_keep_a_whole_line() -> None:
    tl = Timeline()
    feed(tl, _crash())
    checks = tl.checks()
    assert any("writer pool" in a.check.text for a in checks)
    text = banner_text(
        checks, None, t(14), {}, names=("node1", "node2", "node3"), width=80, silence=tl.leader_silence()
    )
    first, second = text.plain.split("\n")
    assert first.strip() == "⏱ leader node1 silent 13s · key lapses ≤17s · writes down 13s…"
    assert second.startswith(" ⚠") and len(second) <= 80 and not second.rstrip().endswith("…"), second
    # The problems count each second in their first minute, as the stopwatch beside them does.
    assert second.endswith("routes to no server (11s)"), second  # "(10s)" from 10 s to 19 s before
    wide = banner_text(checks, None, t(14), {}, width=200, silence=tl.leader_silence()).plain
    assert "\n" not in wide and "its leader key lapses within 17s (ttl 30s)" in wide


def stopwatch_silence(s: LeaderSilence, now: datetime, *, compact: bool = True) -> str:
    """The silence's banner words at ``now`` (compact: as at 80 columns)."""
    return silence_text(s, now, compact=compact)


def test_at_80_columns_a_running_failover_leaves_its_problems_a_line_of_their_own() -> None:
    # Read after `lab fault freeze` of the leader, its key lapsed and no leader yet:
    # "⏱ failover node3 → … · no leader 17s · writes down 13s…  ⚠ HAProxy writer pool…".
    tl = Timeline()
    feed(tl, [*_crash(), writers(leader(_silent(19), None))])
    running = tl.running_failover()
    assert running is not None and running.new_leader is None and tl.leader_silence() is None
    checks = tl.checks()
    text = banner_text(checks, running, t(20), {}, names=("node1", "node2", "node3"), width=80).plain
    first, second = text.split("\n")
    assert first.strip() == "⏱ node1 → … · no leader 19s · writes down 19s…", text
    assert second.strip().startswith("⚠") and not second.rstrip().endswith("…") and len(second) <= 80, text


def test_a_stopped_member_is_no_replica_to_wait_for() -> None:
    # `lab fault stop-patroni` of the leader: its Patroni released the key at once, and its member
    # key stayed listed ("stopped") for its ttl; the banner said "replicas catching up…" 20 s
    # after node1 had streamed from the new leader.
    stopped = [
        _before(0),
        writers(leader(pg_down(_before(1), "node1"), None), "node1"),
        _after(3, node1_state="stopped"),
        _after(5, node1_state="stopped", writer=("node2",)),
    ]
    tl = Timeline()
    feed(tl, stopped)
    (r,) = tl.failovers()
    assert r.replicas_streaming_at == t(3) and r.done and r.ended_at == t(5)
    assert only(
        tl, "all replicas stream from node2 2.0 s after the loss (timeline 4); node1 stopped"
    ).at == t(3)


def test_a_primary_restarted_in_place_is_a_write_outage_record() -> None:
    # kill -9 of the postmaster: Patroni restarts it in place and keeps the key; clients saw writes fail.
    tl = Timeline()
    feed(tl, [_before(0), pg_down(_before(1), "node1"), pg_down(_before(2), "node1"), _before(4.5)])
    (r,) = tl.failovers()
    assert r.leader_kept and r.done and r.old_leader == r.new_leader == "node1"
    assert (r.write_outage_from, r.write_outage_to, r.write_outage_s) == (t(1), t(4.5), 3.5)
    assert summary(r).startswith("write outage 3.5 s on node1")
    assert only(tl, "write outage 3.5 s: HAProxy routes writes to the leader node1 again").at == t(4.5)
    assert stopwatch_text(r, t(5)).startswith("⏱ no failover: node1 kept the leader · writes down 3.5s")


def test_each_end_of_the_outage_seen_at_a_poll_comes_with_the_poll_before() -> None:
    tl = Timeline()
    feed(tl, _failover())
    (r,) = tl.failovers()
    # Writes were seen succeeding at t0 and failing at t6: it began after t0, ended after t6.
    assert (r.write_outage_from_after, r.write_outage_from) == (t(0), t(1))
    assert (r.write_outage_to_after, r.write_outage_to) == (t(6), t(8))
    kept = Timeline()
    feed(kept, [_before(0), pg_down(_before(1), "node1"), pg_down(_before(2), "node1"), _before(4.5)])
    (k,) = kept.failovers()
    assert (k.write_outage_from_after, k.write_outage_to_after, k.write_outage_to) == (t(0), t(2), t(4.5))


def test_writes_are_back_when_the_answers_that_show_it_arrived() -> None:
    # The snapshot is assembled once its slowest source answers; HAProxy's routing and the leader's
    # PostgreSQL said writes succeed before that.
    back = node(_before(4.5), "node1", last_ok_at=t(4.2))
    back = back.model_copy(update={"haproxy": back.haproxy.model_copy(update={"last_ok_at": t(4.1)})})
    tl = Timeline()
    feed(tl, [_before(0), pg_down(_before(1), "node1"), back])
    (r,) = tl.failovers()
    assert (r.write_outage_from, r.write_outage_to, r.write_outage_s) == (t(1), t(4.2), 3.2)
    assert only(tl, "write outage 3.2 s: HAProxy routes writes to the leader node1 again").at == t(4.2)


def test_a_leader_in_recovery_is_a_write_outage_from_that_poll() -> None:
    tl = Timeline()
    feed(tl, [_before(0), node(_before(1), "node1", in_recovery=True), _before(2)])
    (r,) = tl.failovers()
    assert r.leader_kept and (r.write_outage_from, r.write_outage_s) == (t(1), 1.0)


def test_a_leader_that_hung_then_failed_is_down_from_the_read_it_failed() -> None:
    # The read sent at t1.2 hung in a shutdown and failed at t3: writes failed from t1.2, not t3.
    down = pg_down(_before(3), "node1")
    down = node(down, "node1", failing_since=t(1.2))
    tl = Timeline()
    feed(tl, [_before(0), _before(1), down, _before(4)])
    (r,) = tl.failovers()
    assert r.leader_kept and (r.write_outage_from, r.write_outage_s) == (t(1.2), 2.8)


def _lagging_node3(snaps: list[ClusterSnapshot], behind: int) -> list[ClusterSnapshot]:
    """``snaps`` with node3 ``behind`` bytes behind the leader while node1 led (Patroni's lag too)."""
    out = []
    for snap in snaps:
        if snap.cluster.leader in ("node1", None):
            snap = member(
                node(snap, "node3", receive_lsn=L - behind, replay_lsn=L - behind), "node3", lag_bytes=behind
            )
        out.append(snap)
    return out


def test_the_election_is_explained_by_the_forecast_before_the_leader_went_silent() -> None:
    tl = Timeline()
    feed(tl, _lagging_node3(_failover(), 13 * 1024 * 1024))
    (r,) = tl.failovers()
    assert r.forecast_winners == ("node2",) and r.forecast_right is True
    assert r.election == (
        "node2 won: the only member that could race",
        "node3: 13.0 MiB behind > 1.0 MiB maximum_lag_on_failover",
    )
    event = only(tl, "election: " + "; ".join(r.election))
    assert event.at == t(5) and event.severity == 0


def test_a_winner_the_forecast_did_not_name_is_said_plainly() -> None:
    snaps = [s.model_copy(update={"members": tuple(m.model_copy(update={"lag_bytes": 0}) for m in s.members)})
             for s in _failover()]  # fmt: skip
    snaps = [
        member(s, "node2", tags={"nofailover": True}) if s.cluster.leader in ("node1", None) else s
        for s in snaps
    ]
    tl = Timeline()
    feed(tl, snaps)
    (r,) = tl.failovers()
    assert r.forecast_winners == ("node3",) and r.forecast_right is False
    assert r.election[0] == "Patroni promoted node2, the forecast named node3 (node2: nofailover)"
    assert only(tl, "election: " + "; ".join(r.election)).severity == 1
