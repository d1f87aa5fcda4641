"""The timeline: every event kind from snapshot sequences, debounce, order, sources, cadence."""

from __future__ import annotations

from datetime import timedelta

from pgtop_ha.engines.events import diff
from pgtop_ha.engines.timeline import EPISODES_SWEEP, MAX_CHANGES, Timeline, cadence
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.models.event import SOURCES
from pgtop_ha.models.serverlog import LogLine, ServerLog
from pgtop_ha.models.snapshot import Archiver, ClusterSnapshot, HistoryEntry, Replication, Slot
from pgtop_ha.models.thresholds import Level
from tests.models.builders import (
    feed,
    healthy,
    leader,
    member,
    node,
    only,
    pg_down,
    rest_down,
    t,
    texts,
    writers,
)
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()


# -- debounce: one event with a duration ------------------------------------------------------------


def test_flip_and_flip_back_within_debounce_is_one_event_with_a_duration() -> None:
    tl = Timeline(debounce_s=5.0)
    feed(tl, [healthy(0), writers(healthy(1)), writers(healthy(2))])
    down = only(tl, "HAProxy pg_writer/node1 UP → DOWN")
    assert down.at == t(1) and down.source == "haproxy" and down.severity == 1
    assert down.duration_s is None and down.ended_at is None
    back = tl.observe(healthy(4))
    # The same event (same id), now with its duration; no "DOWN → UP" event of its own.
    updated = next(e for e in back if e.id == down.id)
    assert updated.ended_at == t(4) and updated.duration_s == 3.0 and updated.count == 1
    assert not any("DOWN → UP" in x for x in texts(tl))
    assert only(tl, "HAProxy pg_writer/node1 UP → DOWN").duration_s == 3.0


def test_the_timeline_says_when_an_event_was_last_added_or_updated() -> None:
    # The header keeps its seconds that long after the last event (ui/widgets/heartbeat.py).
    tl = Timeline(debounce_s=5.0)
    feed(tl, [healthy(0), healthy(1)])
    assert tl.changed_at is None  # calm snapshots are no news
    feed(tl, [pg_down(healthy(2), "node1"), pg_down(healthy(3), "node1")])
    assert tl.changed_at == t(2)  # added when observed; the same state again moves nothing
    feed(tl, [healthy(4), healthy(5)])
    assert tl.changed_at == t(4)  # the flip back: its event got a duration
    tl.mark(t(9), "kill -9 node1")
    assert tl.changed_at == t(9)
    feed(tl, [healthy(10)])
    assert tl.changed_at == t(9)


def test_a_flip_back_after_the_debounce_is_two_events() -> None:
    tl = Timeline(debounce_s=5.0)
    feed(tl, [healthy(0), pg_down(healthy(1), "node1"), healthy(31)])
    down = only(tl, "PostgreSQL unreachable")
    up = only(tl, "PostgreSQL reachable again")
    assert down.at == t(1) and down.source == "postgres" and down.severity == 2
    assert down.duration_s == 30.0 and down.ended_at == t(31)
    assert up.at == t(31) and up.severity == 0
    assert tl.events().index(down) < tl.events().index(up)


def test_flapping_is_one_event_counted_not_ten() -> None:
    tl = Timeline(debounce_s=5.0)
    snaps = [healthy(0)]
    for i in range(1, 11):
        s = healthy(i)
        snaps.append(member(s, "node1", slow_s=1.5) if i % 2 else s)
    feed(tl, snaps)
    slow = [e for e in tl.events() if "Patroni REST" in e.text]
    assert len(slow) == 1, texts(tl)
    assert slow[0].text == "Patroni REST slow (last answer kept)"
    assert slow[0].count == 5 and slow[0].duration_s == 9.0 and slow[0].at == t(1)


def test_slow_rest_is_not_unreachable_patroni_word_shown() -> None:
    # The lab measured it: /patroni answers in 1.1-1.6 s with state "unknown" while PostgreSQL
    # restarts. That is Patroni alive and PostgreSQL down, never "Patroni REST unreachable".
    tl = Timeline()
    snaps = [healthy(0)]
    for i in range(1, 6):
        s = pg_down(healthy(i * 1.05), "node1")
        s = member(s, "node1", slow_s=1.4, state="unknown", own_state="unknown")
        snaps.append(s)
    snaps.append(healthy(5.25))
    feed(tl, snaps)
    assert not any("Patroni REST unreachable" in x for x in texts(tl))
    assert not any(e.kind == "reachability" and e.severity == 2 and "Patroni" in e.text for e in tl.events())
    slow = only(tl, "Patroni REST slow")
    assert slow.duration_s == 4.2 and slow.source == "patroni"
    assert only(tl, "Patroni state running → unknown").source == "patroni"
    assert only(tl, "PostgreSQL unreachable").duration_s == 4.2
    problems = cluster_problems(snaps[2], SETTINGS.thresholds, POOLS, t(2))
    words = {(p.level, p.text) for p in problems}
    assert (Level.WARN, "Patroni REST slow (last answer kept)") in words
    assert not any("REST unreachable" in p.text for p in problems)


def test_expired_timeout_is_unreachable() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), rest_down(healthy(1), "node2")])
    event = only(tl, "Patroni REST unreachable")
    assert event.severity == 2 and event.node == "node2" and event.kind == "reachability"
    problems = cluster_problems(rest_down(healthy(1), "node2"), SETTINGS.thresholds, POOLS, t(1))
    assert any(p.level is Level.CRIT and p.text == "Patroni REST unreachable" for p in problems)


def test_first_poll_still_running_is_pending_not_down() -> None:
    snap = member(healthy(0), "node3", reachable=False, error="no answer yet", last_ok_at=None, slow_s=0.9)
    problems = cluster_problems(snap, SETTINGS.thresholds, POOLS, t(0))
    assert not any(p.level is Level.CRIT for p in problems)
    tl = Timeline()
    feed(tl, [snap, healthy(1)])
    assert not any("reachab" in x or "unreachable" in x for x in texts(tl))


# -- every kind ---------------------------------------------------------------------------------------


def test_leader_lost_and_elected_role_per_member() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), leader(healthy(1), None), healthy(3, leader="node2")])
    lost = only(tl, "leader lost: node1 → none")
    assert lost.at == t(1) and lost.severity == 2 and lost.source == "patroni" and lost.kind == "leader"
    elected = only(tl, "leader elected: none → node2")
    assert elected.at == t(3) and elected.node == "node2"
    assert only(tl, "Patroni role leader → replica").node == "node1"
    assert only(tl, "Patroni role sync_standby → leader").node == "node2"


def test_cluster_unreachable_is_not_a_leader_loss() -> None:
    gone = healthy(1).model_copy(
        update={"cluster": fx.healthy().cluster.model_copy(update={"leader": None, "reachable": False})}
    )
    gone = member(gone, "node1", role=None)
    tl = Timeline()
    feed(tl, [healthy(0), gone, healthy(2)])
    assert only(tl, "Patroni /cluster unreachable").severity == 2
    assert not any("leader" in x or "Patroni role" in x for x in texts(tl))
    assert tl.failovers() == []


def test_timeline_bump_gets_the_history_reason_when_it_comes() -> None:
    tl = Timeline()
    bumped = node(healthy(1), "node1", timeline=4)
    feed(tl, [healthy(0), bumped])
    bump = only(tl, "timeline 3 → 4")
    assert bump.kind == "timeline" and bump.at == t(1) and bump.source == "postgres"
    entry = HistoryEntry(timeline=3, lsn=0x3000060, reason="no recovery target specified", new_leader="node1")
    later = node(healthy(2), "node1", timeline=4).model_copy(update={"history": (entry,)})
    changed = tl.observe(later)
    again = only(tl, "timeline 3 → 4")
    assert again.id == bump.id and again in changed
    assert again.text == "timeline 3 → 4 (no recovery target specified; new leader node1)"
    # A timeline seen lower afterwards (a stale replica) is no bump.
    feed(tl, [node(healthy(3), "node1", timeline=4)])
    assert sum("timeline" in x for x in texts(tl)) == 1


def test_recovery_flip_and_two_primaries() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), node(healthy(1), "node2", in_recovery=False)])
    flip = only(tl, "PostgreSQL standby → primary")
    assert flip.kind == "recovery" and flip.node == "node2" and flip.source == "postgres"
    assert only(tl, "2 members not in recovery: node1, node2").kind == "check"


def test_haproxy_up_down_per_pool() -> None:
    tl = Timeline()
    reader_down = healthy(1)
    servers = tuple(
        s.model_copy(update={"status": "DOWN 1/2"}) if (s.proxy, s.server) == ("pg_reader", "node3") else s
        for s in reader_down.haproxy.servers
    )
    reader_down = reader_down.model_copy(
        update={"haproxy": reader_down.haproxy.model_copy(update={"servers": servers})}
    )
    feed(tl, [healthy(0), reader_down, healthy(20)])
    down = only(tl, "HAProxy pg_reader/node3 UP → DOWN")  # the transition counter is not news
    assert down.node == "node3" and down.duration_s == 19.0
    assert only(tl, "HAProxy pg_reader/node3 DOWN → UP").severity == 0


def test_a_nameless_walsender_belongs_to_the_node_it_runs_on() -> None:
    snap = healthy(1)
    primary = snap.node("node1")
    assert primary is not None
    extra = (*primary.replication, Replication(pid=4242, state="startup"))
    tl = Timeline()
    feed(tl, [healthy(0), node(snap, "node1", replication=extra)])
    event = only(tl, "replication pid 4242: startup from node1")
    assert event.node == "node1"


def test_replication_state() -> None:
    snap = healthy(1)
    primary = snap.node("node1")
    assert primary is not None
    reps = tuple(
        r.model_copy(update={"state": "catchup"}) if r.application_name == "node3" else r
        for r in primary.replication
    )
    tl = Timeline()
    feed(tl, [healthy(0), node(snap, "node1", replication=reps)])
    event = only(tl, "replication node3: streaming → catchup from node1")
    assert event.severity == 1 and event.kind == "replication" and event.node == "node3"
    gone = tuple(r for r in reps if r.application_name != "node3")
    feed(tl, [node(healthy(10), "node1", replication=gone)])
    assert only(tl, "replication node3: no longer connected to node1").severity == 1
    back = (*gone, Replication(application_name="node3", state="streaming"))
    feed(tl, [node(healthy(20), "node1", replication=back)])
    assert only(tl, "replication node3: streaming from node1").severity == 0


def test_slot_inactive_lost_wal_status() -> None:
    def slots(**kw: object) -> tuple[Slot, ...]:
        n = healthy().node("node1")
        assert n is not None
        return tuple(s.model_copy(update=kw) if s.slot_name == "lab_sub" else s for s in n.slots)

    tl = Timeline()
    feed(
        tl,
        [
            healthy(0),
            node(healthy(1), "node1", slots=slots(active=False)),
            node(healthy(10), "node1", slots=slots(active=False, wal_status="extended")),
            node(healthy(20), "node1", slots=slots(active=False, wal_status="lost")),
        ],
    )
    assert only(tl, "slot lab_sub inactive").node == "node1"
    assert only(tl, "slot lab_sub wal_status reserved → extended").severity == 1
    assert only(tl, "slot lab_sub wal_status extended → lost").severity == 2
    n = healthy().node("node1")
    assert n is not None
    dropped = tuple(s for s in n.slots if s.slot_name != "node3")
    feed(tl, [node(healthy(30), "node1", slots=dropped)])
    assert only(tl, "slot node3 dropped").node == "node1"


def test_permanent_slot_missing_on_a_member() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), node(healthy(1), "node3", slots=()), healthy(20)])
    missing = only(tl, "permanent slot lab_sub missing on this member")
    assert missing.node == "node3" and missing.severity == 1 and missing.duration_s == 19.0
    assert only(tl, "permanent slot lab_sub present again").node == "node3"
    problems = cluster_problems(node(healthy(1), "node3", slots=()), SETTINGS.thresholds, POOLS, t(1))
    assert any(p.subject == "node3" and p.text == "permanent slot missing: lab_sub" for p in problems)


def test_archiver_failing_and_recovered() -> None:
    good = Archiver(
        archived_count=42, last_archived_wal="0000000300000000000000A1", last_archived_time=t(-95)
    )
    failing = good.model_copy(
        update={"failed_count": 1, "last_failed_wal": "0000000300000000000000A2", "last_failed_time": t(1)}
    )
    recovered = failing.model_copy(
        update={"last_archived_wal": "0000000300000000000000A2", "last_archived_time": t(30)}
    )
    tl = Timeline()
    feed(
        tl,
        [
            node(healthy(0), "node1", archiver=good),
            node(healthy(1), "node1", archiver=failing),
            node(healthy(30), "node1", archiver=recovered),
        ],
    )
    event = only(tl, "archiver failing: 0000000300000000000000A2")
    assert event.severity == 2 and event.node == "node1" and event.duration_s == 29.0
    assert only(tl, "archiver recovered").at == t(30)


def test_copy_started_and_finished() -> None:
    tl = Timeline()
    feed(
        tl,
        [
            node(healthy(0), "node1", copy_progress=()),
            healthy(1),
            node(healthy(20), "node1", copy_progress=()),
        ],
    )
    started = only(tl, "COPY started: COPY TO sync_big (lab_sub_16400_sync_16390)")
    assert started.at == t(1) and started.kind == "copy"
    assert only(tl, "COPY finished: COPY TO sync_big").at == t(20)
    short = Timeline()
    feed(
        short,
        [
            node(healthy(0), "node1", copy_progress=()),
            healthy(1),
            node(healthy(3), "node1", copy_progress=()),
        ],
    )
    assert only(short, "COPY started").duration_s == 2.0
    assert not any("finished" in x for x in texts(short))


def test_pending_restart_and_pause() -> None:
    paused = healthy(10).model_copy(update={"cluster": healthy().cluster.model_copy(update={"pause": True})})
    tl = Timeline()
    feed(tl, [healthy(0), member(healthy(1), "node2", pending_restart=True), paused, healthy(20)])
    assert only(tl, "pending restart").node == "node2"
    assert only(tl, "restart no longer pending").at == t(10)
    assert only(tl, "cluster paused (maintenance mode)").at == t(10)
    assert only(tl, "cluster resumed").at == t(20)


def test_markers_and_actions_in_true_order_with_sources() -> None:
    tl = Timeline()
    feed(tl, [healthy(0)])
    mark = tl.mark(t(1), "killed primary")
    sent = tl.action(t(2), "switchover node1 → node2", "sent", node="node2")
    feed(tl, [healthy(3), leader(healthy(4), "node2")])
    done = tl.action(t(5), "switchover done: node2 leads", "done", ok=True, node="node2")
    failed = tl.action(t(6), "pause refused", "done", ok=False)
    events = tl.events()
    assert [e.id for e in events] == sorted(e.id for e in events)  # ids follow the order observed
    assert mark.kind == "marker" and mark.source == "marker" and mark.at == t(1)
    assert sent.source == "action" and sent.text.endswith("(sent)") and sent.at == t(2)
    assert done.at == t(5) and done.severity == 0 and failed.severity == 2
    leader_event = only(tl, "leader node1 → node2")
    assert events.index(sent) < events.index(leader_event) < events.index(done)
    assert {e.source for e in events} <= set(SOURCES)


def test_unreachable_source_keeps_its_facts() -> None:
    # node1's PostgreSQL down: its slots, COPY, archiver and walsenders are unknown, not gone.
    assert [e.text for e in diff(healthy(0), pg_down(healthy(1), "node1"))] == ["PostgreSQL unreachable"]
    tl = Timeline()
    feed(tl, [healthy(0), pg_down(healthy(1), "node1"), pg_down(healthy(2), "node1"), healthy(20)])
    assert not any(e.kind in ("slot", "copy", "archiver", "replication") for e in tl.events()), texts(tl)


def test_bounded_timeline_keeps_the_newest() -> None:
    tl = Timeline(keep=3)
    for i in range(5):
        tl.mark(t(i), f"m{i}")
    assert texts(tl) == ["m2", "m3", "m4"]


# -- cadence ---------------------------------------------------------------------------------------------


def test_cadence_is_idle_when_calm_fast_while_something_is_wrong() -> None:
    tl = Timeline()
    assert cadence(tl, 1.0, t(0)) == 1.0  # nothing seen yet
    feed(tl, [healthy(0), healthy(1)])
    assert tl.unrest(t(1)) == () and cadence(tl, 1.0, t(1)) == 1.0
    feed(tl, [member(healthy(2), "node2", slow_s=1.5)])
    assert cadence(tl, 1.0, t(2)) == 0.25
    assert cadence(tl, 0.5, t(2)) == 0.2  # never below 0.2 s
    assert cadence(tl, 0.2, t(2)) == 0.2
    assert cadence(tl, 2.0, t(2)) == 0.5
    feed(tl, [healthy(3)])
    assert cadence(tl, 1.0, t(3)) == 1.0
    feed(tl, [leader(healthy(4), None)])
    assert "no leader" in tl.unrest(t(4))
    feed(tl, [healthy(5, leader="node2")])
    # A leader change keeps it fast for 30 s (and the stopwatch is running meanwhile).
    assert cadence(tl, 1.0, t(20)) == 0.25
    assert "leader changed" in tl.unrest(t(20)) and "leader changed" not in tl.unrest(t(40))


def test_cadence_for_disagreements_and_failures_seen_while_watching() -> None:
    tl = Timeline()
    feed(tl, [healthy(0), writers(healthy(1))])
    assert tl.unrest(t(1)) == ("HAProxy writer pool routes to no server",)
    assert cadence(tl, 1.0, t(1)) == 0.25
    feed(tl, [healthy(2), rest_down(healthy(3), "node3")])
    assert tl.unrest(t(3)) == ("node3 Patroni REST unreachable",)
    # A member that never answered since the console started is a standing fact, not unrest.
    never = member(healthy(0), "node3", reachable=False, error="refused", last_ok_at=None)
    calm = Timeline()
    feed(calm, [never, member(healthy(1), "node3", reachable=False, error="refused", last_ok_at=None)])
    assert calm.unrest(t(1)) == ()


def test_event_times_are_observation_times() -> None:
    snaps = [healthy(0), pg_down(healthy(1.5), "node1")]
    tl = Timeline()
    feed(tl, snaps)
    assert all(e.at == snaps[1].taken_at for e in tl.events())
    assert snaps[1].taken_at - snaps[0].taken_at == timedelta(seconds=1.5)


def test_a_member_heard_for_the_first_time_starts_there_not_news() -> None:
    # A console started while node3's Patroni was stopped: node3 is no member until it joins.
    # When it joins, its slots existed on disk all along: "member joined", never "slot … created".
    def without_node3(snap: ClusterSnapshot) -> ClusterSnapshot:
        members = tuple(m for m in snap.members if m.name != "node3")
        nodes = tuple(n for n in snap.nodes if n.name != "node3")
        return snap.model_copy(update={"members": members, "nodes": nodes})

    three = healthy(0).node("node3")
    assert three is not None and three.slots  # the fixture's standby has slots to speak of
    tl = Timeline()
    feed(tl, [without_node3(healthy(0)), without_node3(healthy(1)), healthy(2)])
    said = [(e.node, e.text) for e in tl.events()]
    assert ("node3", "member joined") in said
    assert not [x for x in said if x[0] == "node3" and x[1].endswith(" created")], said
    # A node heard before is no news source of its own: a slot it did not have is news.
    extra = three.slots[0].model_copy(update={"slot_name": "new_one"})
    feed(tl, [node(healthy(3), "node3", slots=(*three.slots, extra))])
    assert only(tl, "slot new_one created").node == "node3"


def test_the_sources_heard_stay_bounded_when_a_server_makes_up_names() -> None:
    # A hostile /cluster naming new members every cycle must not grow what the timeline keeps.
    def named(snap: ClusterSnapshot, cycle: int) -> ClusterSnapshot:
        members = tuple(m.model_copy(update={"name": f"{m.name}-{cycle}"}) for m in snap.members)
        nodes = tuple(n.model_copy(update={"name": f"{n.name}-{cycle}"}) for n in snap.nodes)
        return snap.model_copy(update={"members": members, "nodes": nodes})

    tl = Timeline()
    feed(tl, [named(healthy(i), i) for i in range(200)])
    assert len(tl._scopes) <= 2 * len(healthy(0).members) + 4, sorted(tl._scopes)
    # The flips of those names (joined, then gone the next cycle) are swept once they ended.
    feed(tl, [named(healthy(i), i) for i in range(200, 1200)])
    assert len(tl._episodes) <= EPISODES_SWEEP + 50, len(tl._episodes)


def test_a_state_is_not_said_to_have_ended_when_its_member_leaves_the_cluster() -> None:
    # Read live beside `lab fault stop-patroni`: "Patroni state streaming → stopped — for 20.1 s"
    # once the member's key expired, read as "back after 20 s" while it was stopped all along.
    stopped = member(healthy(1), "node2", state="stopped")
    gone = member(
        healthy(21), "node2", role=None, state=None, error="not listed by Patroni's /cluster any more"
    )
    tl = Timeline(debounce_s=30.0)
    feed(tl, [healthy(0), stopped, gone])
    event = only(tl, "Patroni state streaming → stopped")
    assert event.duration_s is None and event.ended_at is None
    assert only(tl, "member left").node == "node2"
    # A state that does change while the member is listed still gets its duration.
    tl = Timeline(debounce_s=30.0)
    feed(tl, [healthy(0), stopped, healthy(21)])
    assert only(tl, "Patroni state streaming → stopped").duration_s == 20.0


def test_a_snapshot_that_changes_everything_is_bounded_in_events() -> None:
    big = fx.grown(healthy(0), 400)
    moved = big.model_copy(
        update={
            "taken_at": t(1),
            "members": tuple(m.model_copy(update={"state": "stopped"}) for m in big.members),
        }
    )
    tl = Timeline()
    added = feed(tl, [big, moved])
    summary = [e for e in added if e.kind == "summary"]
    assert len(summary) == 1 and "more changes in this snapshot not listed" in summary[0].text
    assert len(added) <= MAX_CHANGES + 5  # the cap, the summary and the stopwatch's own


# -- the server's log --------------------------------------------------------------------------------


def test_a_log_line_said_again_counts_on_its_event_for_a_minute() -> None:
    # A walreceiver that cannot follow: a FATAL every 5 s for two minutes, its pid in each.
    tl = Timeline(debounce_s=5.0)
    feed(tl, [healthy(0)])
    for i in range(24):
        line = LogLine(at=t(5 * i), severity="FATAL", message=f"invalid option (pid {900 + i})")
        other = (
            (LogLine(at=t(5 * i), severity="ERROR", message='relation "x" does not exist'),) if i == 3 else ()
        )
        feed(tl, [node(healthy(5 * i + 1), "node2", server_log=ServerLog(lines=(line, *other)))])
    logs = [e for e in tl.events() if e.kind == "log"]
    fatals = [(e.at, e.count, e.duration_s, e.text) for e in logs if e.text.startswith("FATAL")]
    # One event a minute (from its first line), stamped when the server wrote the first.
    assert fatals == [
        (t(0), 13, 60.0, "FATAL: invalid option (pid 900)"),
        (t(65), 11, 50.0, "FATAL: invalid option (pid 913)"),
    ]
    assert [e.text for e in logs if not e.text.startswith("FATAL")] == ['ERROR: relation "x" does not exist']
