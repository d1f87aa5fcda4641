"""Pure parts: rows() of every pane, health grading, events between snapshots, number formats."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pgtop_ha.engines.events import diff
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.problems import cluster_problems, member_problems, problem
from pgtop_ha.judge.replication import lag_level
from pgtop_ha.judge.rules import PG_SLOW
from pgtop_ha.judge.slots import missing_permanent_slots
from pgtop_ha.judge.sources import stale_level
from pgtop_ha.models.event import Event
from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.snapshot import (
    POSTGRES_OFF,
    Archiver,
    ClusterSnapshot,
    HAProxyState,
    Maintenance,
    NodeSnapshot,
    Process,
    Slot,
    WalReceiver,
)
from pgtop_ha.models.thresholds import Level, grade
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import age, age_step, bar, duration, fit_name, human_bytes, lsn, rate, sparkline
from pgtop_ha.ui.panes import (
    archiver,
    cluster,
    events,
    haproxy,
    horizon,
    locks,
    memory,
    overview,
    problems,
    progress,
    replication,
    slots,
    waits,
)
from pgtop_ha.ui.panes.base import NOT_READ, Context, Row, SameInputs
from pgtop_ha.ui.panes.registry import PANES
from pgtop_ha.ui.themes import available, level_styles, load_theme, resolve
from pgtop_ha.ui.widgets.pane import matches
from tests.ui import fixtures as fx

S = fx.settings()
POOLS = Pools(("pg_writer",), ("pg_reader",))
NOW = fx.T0 + timedelta(seconds=21)


def ctx(**kw: object) -> Context:
    base: dict[str, object] = {"thresholds": S.thresholds, "pools": POOLS, "now": NOW}
    base.update(kw)
    return Context(**base)  # type: ignore[arg-type]


def texts(rows: list[Row]) -> dict[str, list[str]]:
    return {r.key: [c.text for c in r.cells.values()] for r in rows}


def test_formats_hide_noise_below_their_precision() -> None:
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(300 * fx.MiB) == human_bytes(300 * fx.MiB + 40_000) == "300 MiB"
    assert human_bytes(None) == "-"
    assert age(7.9) == "7s" and age(34) == age(39) == "30s" and age(125) == "2m"
    assert age(3 * 3600 + 300) == "3h05m" and age(None) == "-"
    assert age(9.9, floor=10) == "<10s" and age(10.2, floor=10) == "10s" and age(-1, floor=10) == "?"
    assert duration(0.0004) == "0" and duration(0.012) == "12ms" and duration(1.46) == "1.5s"
    assert rate(None) == "-" and rate(0.2) == "0" and rate(2 * fx.MiB) == "2.0 MiB/s"
    assert lsn(0x3000060) == "0/3000060" and lsn((5 << 32) + 16) == "5/10"
    assert sparkline([0, 0, 0]) == "▁▁▁" and sparkline([0, 5, 10]) == "▁▄█"
    assert sparkline([None, 1]) == " █"
    assert bar(0.5, 4) == "██░░" and bar(None, 3) == "···"


@settings(max_examples=400, deadline=None)
@given(
    st.none() | st.floats(allow_nan=True) | st.integers(min_value=-10, max_value=2**70),
    st.sampled_from([0, 10]),
)
def test_an_age_step_shows_as_the_age_it_stands_for(seconds: float | None, floor: int) -> None:
    # Rows cached on an age's step (not its seconds) must show exactly what the age would.
    assert age(age_step(seconds, floor), floor) == age(seconds, floor)


def test_age_steps_follow_the_shown_text() -> None:
    assert [age_step(x) for x in (7.9, 34, 39, 125, 3 * 3600 + 330, 2 * 86400 + 5)] == [
        7.0,
        30.0,
        30.0,
        120.0,
        3 * 3600 + 300.0,
        2 * 86400.0,
    ]
    assert age_step(9.9, floor=10) == 0.0 and age_step(None) is None and age_step(-1) == -1


def test_grades_from_thresholds() -> None:
    t = S.thresholds
    assert grade(None, 1, 2) is Level.OK
    assert lag_level(t, 0) is Level.OK
    assert lag_level(t, int(t.lag_bytes.warn)) is Level.WARN
    assert lag_level(t, 0, t.lag_s.crit) is Level.CRIT
    assert stale_level(t, None) is Level.CRIT and stale_level(t, 0.5) is Level.OK
    assert Level.CRIT.word == "✖ CRIT" and Level.WARN.word == "▲ WARN" and Level.OK.word == "✔ OK"


def test_kill_primary_is_the_worst_problem() -> None:
    snap = fx.kill_primary()
    probs = cluster_problems(snap, S.thresholds, POOLS, NOW)
    assert probs[0].level is Level.CRIT and probs[0].subject == "node1"
    assert probs[0].short == "PG DOWN, still routed"
    assert member_problems(fx.healthy(), "node1", S.thresholds, POOLS, NOW) == []


def test_problems_are_derived_once_per_context_and_snapshot() -> None:
    # The Cluster pane, the Problems pane and the overview's alerts read one derivation per
    # refresh; a context shown another snapshot derives again.
    c, snap = ctx(), fx.kill_primary()
    shared = c.problems(snap)
    assert c.problems(snap) is shared
    assert list(shared) == cluster_problems(snap, S.thresholds, POOLS, NOW)
    own = c.member_problems(snap, "node1")
    assert c.member_problems(snap, "node1") is own
    assert list(own) == member_problems(snap, "node1", S.thresholds, POOLS, NOW)
    assert shared[0] is own[0]  # the member's problems computed once, listed by both
    row = texts(cluster.rows(snap, c))["node1"]
    assert row[4].startswith(own[0].short or own[0].text)
    later = dataclasses.replace(c, now=NOW + timedelta(minutes=5))  # another time: its own
    assert later.problems(snap) is not shared and c.problems(snap) is shared
    healthy = fx.healthy()
    assert c.problems(healthy) is not shared
    assert list(c.problems(healthy)) == cluster_problems(healthy, S.thresholds, POOLS, NOW)


def test_cluster_problems_list_the_member_problems_given() -> None:
    snap = fx.kill_primary()
    given = problem(Level.WARN, "node1", "given, not computed again", rule=PG_SLOW.id)
    found = cluster_problems(snap, S.thresholds, POOLS, NOW, members={"node1": [given]})
    assert given in found
    assert not any(p.subject == "node1" and p.short == "PG DOWN, still routed" for p in found)


def test_a_problem_keeps_its_row_while_its_figure_changes() -> None:
    # A lag or a slot's retained WAL that grows each second is one lasting problem: its row is
    # rewritten in place, never removed and added again (each removal re-lays out the screen).
    before, after = fx.lagging(fx.healthy(), 300 * fx.MiB), fx.lagging(fx.healthy(), 400 * fx.MiB)
    rows_before, rows_after = problems.rows(before, ctx()), problems.rows(after, ctx())
    assert [r.key for r in rows_before] == [r.key for r in rows_after]
    assert [r.cells["text"].text for r in rows_before] != [r.cells["text"].text for r in rows_after]
    assert "node3|replica lag" in [r.key for r in rows_after]
    alerts = [overview.alert_rows(s, ctx()) for s in (before, after)]
    assert [r.key for r in alerts[0]] == [r.key for r in alerts[1]]


def test_writer_on_a_replica_and_two_writers_are_crit() -> None:
    snap = fx.healthy()
    servers = tuple(
        s.model_copy(update={"status": "UP"}) if (s.proxy, s.server) == ("pg_writer", "node3") else s
        for s in snap.haproxy.servers
    )
    snap = snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})
    texts_ = [p.text for p in cluster_problems(snap, S.thresholds, POOLS, NOW)]
    assert "HAProxy writer UP on node1, node3" in texts_
    assert "HAProxy routes writes to a non-leader" in texts_
    row = texts(cluster.rows(snap, ctx()))["node3"]
    assert row[1] == "✖ CRIT" and row[4] == "writes to non-leader"


def test_events_between_snapshots() -> None:
    assert diff(None, fx.healthy()) == ()
    assert diff(fx.healthy(), fx.healthy(fx.T0 + timedelta(seconds=1))) == ()
    evs = diff(fx.healthy(), fx.failed_over())
    text = [e.text for e in evs]
    assert "leader node1 → node2" in text
    assert "Patroni REST unreachable" in text and "PostgreSQL unreachable" in text
    assert "Patroni role leader → replica" in text
    assert "HAProxy pg_writer/node1 UP → DOWN" in text
    assert "HAProxy pg_writer/node2 DOWN → UP" in text
    # An empty HAProxy read is "no data this cycle", not every server going away.
    empty = fx.healthy(fx.T0 + timedelta(seconds=1)).model_copy(
        update={"haproxy": HAProxyState(error="stats cut short")}
    )
    assert [e.kind for e in diff(fx.healthy(), empty)] == ["haproxy"]


def test_cluster_rows() -> None:
    rows = texts(cluster.rows(fx.failed_over(), ctx(now=fx.T0 + timedelta(seconds=41))))
    assert rows["node1"][:4] == ["node1", "✖ CRIT", "replica", "DOWN"]
    assert rows["node1"][10] == "✖ REST+PG 20s"
    assert rows["node2"][:4] == ["node2", "✔ OK", "leader", "primary"]


def test_haproxy_rows_flag_routing_against_roles() -> None:
    rows = texts(haproxy.rows(fx.kill_primary(), ctx()))
    assert rows["pg_writer|node1"][3] == "✖ CRIT"  # UP but PostgreSQL is down
    assert rows["pg_writer|"][3:5] == ["✖ CRIT", "1/3 UP"]
    assert rows["pg_reader|node2"][3:6] == ["✔ OK", "UP", "L7OK"]
    assert next(iter(rows)) == "pg_writer|"  # the writer pool comes first


def test_a_haproxy_check_that_gets_no_answer_is_never_ok() -> None:
    # A member's Patroni stopped before the console started: HAProxy's server for it joined no
    # member and read "DOWN L4CON ✔ OK". A check refused or timed out is no pool's normal state,
    # joined or not; a 503 (L7STS) is every replica's normal state in the writer pool.
    snap = fx.healthy()

    def level(server: str, status: str, check: str, proxy: str = "pg_writer") -> str:
        servers = tuple(
            s.model_copy(update={"status": status, "check_status": check})
            if (s.server, s.proxy) == (server, proxy)
            else s
            for s in snap.haproxy.servers
        )
        rows = texts(
            haproxy.rows(
                snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})}),
                ctx(),
            )
        )
        return rows[f"{proxy}|{server}"][3]

    assert level("node2", "DOWN", "L7STS") == "✔ OK"  # a replica answering 503 to the writer check
    assert level("node2", "DOWN", "L4CON") == "▲ WARN"  # its Patroni refused the connection
    assert level("node3", "DOWN", "* L7TOUT") == "▲ WARN"  # timed out; a new check under way
    assert level("node3", "MAINT", "L4CON") == "✔ OK"  # put out by hand: its checks do not run
    unjoined = snap.haproxy.model_copy(
        update={
            "servers": tuple(
                s.model_copy(update={"server": "old-db"}) if s.server == "node3" else s
                for s in snap.haproxy.servers
            )
        }
    )
    snap = snap.model_copy(update={"haproxy": unjoined})
    assert level("old-db", "DOWN", "L4CON", proxy="pg_reader") == "▲ WARN"
    assert level("old-db", "DOWN", "L7STS", proxy="pg_reader") == "✔ OK"  # it answered: not judged


def test_replication_rows_with_trend() -> None:
    history = [fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=i)), lag=i * fx.MiB) for i in range(1, 5)]
    cur = fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=5)), lag=8 * fx.MiB)
    rows = texts(replication.rows(cur, ctx(history=history)))
    node3 = rows["node1|node3"]
    assert node3[8] == "8.0 MiB" and node3[13] == "▁▂▃▄█"
    # The standby's last reply (2 s before the snapshot), as an age: within the status
    # interval it is just on time, and the text does not tick every second.
    reply = {
        n: texts(replication.rows(cur, ctx(now=cur.taken_at + timedelta(seconds=n))))["node1|node3"][12]
        for n in (0, 7, 35)
    }
    assert reply == {0: "<10s", 7: "<10s", 35: "30s"}
    assert rows["node1|node2"][4] == "sync"


def test_slot_rates_from_deltas_and_presence_matrix() -> None:
    prev = fx.healthy()
    cur = fx.healthy(fx.T0 + timedelta(seconds=2))
    node1 = cur.node("node1")
    assert node1 is not None
    slots_ = tuple(
        s.model_copy(update={"spill_bytes": 4 * fx.MiB}) if s.slot_name == "lab_sub" else s
        for s in node1.slots
    )
    cur = cur.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"slots": slots_}) if n.name == "node1" else n for n in cur.nodes
            )
        }
    )
    rows = texts(slots.rows(cur, ctx(history=[prev])))
    assert rows["node1|lab_sub"][8] == "2.0 MiB/s"
    assert rows["node1|lab_sub"][9] == "0"
    no_slot = fx.healthy().model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"slots": ()}) if n.name == "node3" else n for n in fx.healthy().nodes
            )
        }
    )
    matrix = texts(slots.matrix_rows(no_slot, ctx()))
    assert matrix["lab_sub"] == ["lab_sub", "Patroni", "✔ yes", "✔ yes", "✖ no"]
    assert [c.key for c in slots.matrix_columns(no_slot)] == ["slot", "kept", "node1", "node2", "node3"]


def test_failover_slots_of_postgresql_17_join_the_kept_slot_matrix() -> None:
    snap = fx.healthy()
    primary = Slot(slot_name="fo", slot_type="logical", failover=True)
    synced = Slot(slot_name="fo", slot_type="logical", failover=True, synced=True)
    extra = {"node1": primary, "node2": synced}
    snap = snap.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"slots": (*n.slots, extra[n.name])}) if n.name in extra else n
                for n in snap.nodes
            )
        }
    )
    matrix = texts(slots.matrix_rows(snap, ctx()))
    assert matrix["fo"] == ["fo", "PostgreSQL", "✔ yes", "✔ synced", "✖ no"]
    assert missing_permanent_slots(snap, "node3") == ["fo"]
    assert missing_permanent_slots(snap, "node2") == []
    # A standby's own copy (left from when it led) is never updated; a temporary one is dropped
    # at promotion: neither would survive a failover to it.
    for copy, shown in (
        (Slot(slot_name="fo", slot_type="logical", failover=True, synced=False), "✖ stale"),
        (Slot(slot_name="fo", slot_type="logical", failover=True, synced=True, temporary=True), "… syncing"),
    ):
        nodes = tuple(
            n.model_copy(update={"slots": (*n.slots, copy)}) if n.name == "node3" else n for n in snap.nodes
        )
        held = snap.model_copy(update={"nodes": nodes})
        assert texts(slots.matrix_rows(held, ctx()))["fo"][4] == shown
        assert missing_permanent_slots(held, "node3") == ["fo"]


def test_copy_rows_rate_and_eta() -> None:
    prev = fx.healthy()
    cur = fx.healthy(fx.T0 + timedelta(seconds=10))
    node1 = cur.node("node1")
    assert node1 is not None
    copies = tuple(
        c.model_copy(update={"bytes_processed": 400 * fx.MiB, "percent": None}) for c in node1.copy_progress
    )
    cur = cur.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"copy_progress": copies}) if n.name == "node1" else n for n in cur.nodes
            )
        }
    )
    row = texts(progress.rows(cur, ctx(history=[prev])))["node1|5001"]
    assert row[1] == "COPY publisher" and row[5] == "~33%"
    assert row[8] == "10 MiB/s" and row[9] == "1m"  # 800 MiB left at 10 MiB/s = 80 s
    subs = texts(progress.rows(fx.subscriber_copy(fx.healthy()), ctx()))
    assert subs["node3|sub|lab_sub|"][5:7] == ["3/4", "d:1 r:3"]


def test_maintenance_rows_percent_rate_and_eta_of_the_phase() -> None:
    prev, cur = fx.healthy(), fx.healthy(fx.T0 + timedelta(seconds=10))

    def vacuuming(snap: ClusterSnapshot, done: int) -> ClusterSnapshot:
        m = Maintenance(
            pid=7001, command="autovacuum", phase="scanning heap", datname="labdb", relation="sync_big",
            done=done, total=10_000, unit="blocks",
        )  # fmt: skip
        nodes = tuple(
            n.model_copy(update={"maintenance": (m,)}) if n.name == "node1" else n for n in snap.nodes
        )
        return snap.model_copy(update={"nodes": nodes})

    row = texts(progress.rows(vacuuming(cur, 3_000), ctx(history=[vacuuming(prev, 2_000)])))["node1|m|7001"]
    assert row[1:4] == ["autovacuum", "sync_big", "scanning heap"]
    assert row[5] == "30%" and row[6] == "3000 blk" and row[8] == "100 blk/s"
    assert row[9] == "1m"  # 7,000 blocks left at 100 a second


def test_archiver_rows_warn_on_failure_and_queue() -> None:
    snap = fx.healthy()
    arch = Archiver(
        archived_count=42,
        failed_count=3,
        ready_count=150,
        last_archived_time=fx.T0 - timedelta(minutes=5),
        last_failed_time=fx.T0 - timedelta(seconds=3),
    )
    snap = snap.model_copy(
        update={
            "nodes": tuple(
                n.model_copy(update={"archiver": arch}) if n.name == "node1" else n for n in snap.nodes
            )
        }
    )
    row = texts(archiver.rows(snap, ctx()))["node1"]
    assert row[1] == "✖ CRIT" and row[2] == "150"
    assert row[7] == "3" and row[8] == "20s"


def test_overview_archiver_after_a_crash_says_since_when_not_never() -> None:
    # A crash empties pg_stat_archiver (stats_reset moves to the restart): the line must not read
    # as "archiving never worked" beside a failure test.
    def line(arch: Archiver) -> str:
        snap = fx.healthy()
        nodes = tuple(n.model_copy(update={"archiver": arch}) if n.name == "node1" else n for n in snap.nodes)
        rows = texts(overview.state_rows(snap.model_copy(update={"nodes": nodes}), ctx()))
        return rows["archiver"][1]

    reset = Archiver(archived_count=0, ready_count=2, stats_reset=NOW - timedelta(seconds=75))
    assert line(reset) == "2 ready, nothing archived since its stats reset 1m ago"
    assert line(Archiver(archived_count=0, ready_count=0)) == "0 ready, nothing archived yet"
    done = Archiver(archived_count=9, ready_count=0, last_archived_time=NOW - timedelta(seconds=12))
    assert (
        line(done.model_copy(update={"stats_reset": NOW - timedelta(hours=2)}))
        == "0 ready, last archived 10s ago"
    )
    failing = done.model_copy(
        update={"failed_count": 1, "ready_count": 4, "last_failed_time": NOW - timedelta(seconds=1)}
    )
    assert line(failing) == "4 ready, last archived 10s ago, FAILING (1 failure)"  # read "(1 failures)"
    assert line(failing.model_copy(update={"failed_count": 16})).endswith("FAILING (16 failures)")


def test_overview_archiver_unknown_says_why_instead_of_vanishing() -> None:
    # After a kill of the leader the line went away, as if there were nothing to say about
    # archiving in the minutes it stopped.
    def line(snap: ClusterSnapshot) -> str:
        return texts(overview.state_rows(snap, ctx()))["archiver"][1]

    assert line(fx.kill_primary()) == "unknown: node1's PostgreSQL unreachable"
    no_leader = fx.kill_primary().model_copy(
        update={"cluster": fx.kill_primary().cluster.model_copy(update={"leader": None})}
    )
    no_leader = no_leader.model_copy(
        update={"members": tuple(m.model_copy(update={"role": "replica"}) for m in no_leader.members)}
    )
    assert line(no_leader) == "unknown: no leader"
    unread = fx.healthy().model_copy(
        update={"nodes": tuple(n.model_copy(update={"archiver": None}) for n in fx.healthy().nodes)}
    )
    assert line(unread) == "unknown: not read on node1"
    assert line(fx.healthy()).startswith("0 ready, last archived ")


def test_memory_rows_rank_by_pss() -> None:
    rows = memory.rows(fx.healthy(), ctx())
    node1 = [r for r in rows if r.node == "node1"]
    assert node1[0].cells["what"].text == "TOTAL 3 procs"
    assert node1[1].cells["what"].text.startswith("HugePages 512 × 2.0 MiB: 62 free, 40 reserved")
    assert node1[1].cells["state"].text == "try: shm in them"  # 450 pages needed, 490 taken
    assert [r.cells["pid"].text for r in node1[2:]] == ["1001", "1002", "1003"]
    assert node1[0].cells["pss"].text == "21 MiB"


def test_events_and_problems_rows() -> None:
    evs = diff(fx.healthy(), fx.kill_primary())
    rows = events.rows(fx.kill_primary(), ctx(events=evs))
    assert [c.text for c in rows[0].cells.values()][1:] == [
        "✖ CRIT",
        "node1",
        "-",  # still unreachable: no span yet
        "PostgreSQL unreachable",
        "reachability",
    ]
    assert texts(problems.rows(fx.healthy(), ctx())) == {"|ok": ["✔ OK", "cluster", "no problems"]}


def test_themes_are_data_files() -> None:
    assert {"dark", "light", "mono"} <= set(available())
    mono = load_theme("mono")
    styles = level_styles(mono, {})
    assert styles[Level.CRIT].bold and styles[Level.CRIT].reverse
    dark = load_theme("dark")
    assert resolve("bold $error", {"error": "#ff5f5f"}).color is not None
    assert dark.theme.dark and not load_theme("light").theme.dark


def test_replication_falls_back_to_the_standbys_own_view() -> None:
    rows = texts(replication.PANE.rows_of(fx.kill_primary(), ctx()))
    assert set(rows) == {"?|node2", "?|node3", "node1|not-read"}
    assert rows["?|node2"][3] == "no receiver" and rows["?|node2"][2] == "▲ WARN"


def test_memory_total_row_says_why_memory_is_missing() -> None:
    base = fx.healthy()
    node1 = base.nodes[0].model_copy(
        update={"unavailable": {"processes.memory": "needs superuser or pg_read_server_files"}}
    )
    snap = base.model_copy(update={"nodes": (node1, *base.nodes[1:])})
    total = next(r for r in memory.rows(snap, ctx()) if r.key == f"{node1.name}|total")
    assert total.cells["state"].text == "needs superuser or pg_read_server_files"


def test_memory_rows_keep_their_places_when_two_backends_trade_the_last_one() -> None:
    # Keyed by rank (TOP = 8 shown): the eighth and ninth backends trading places change one row's cells
    # instead of removing a row and adding another (each a whole-screen layout, issue 10).
    def with_pss(eighth: int, ninth: int) -> list[Row]:
        procs = [
            Process(pid=100 + i, backend_type="client backend", pss_bytes=(20 - i) * fx.MiB) for i in range(7)
        ]
        procs += [Process(pid=200, pss_bytes=eighth), Process(pid=201, pss_bytes=ninth)]
        base = fx.healthy()
        node1 = base.nodes[0].model_copy(update={"processes": tuple(procs)})
        snap = base.model_copy(update={"nodes": (node1, *base.nodes[1:])})
        return [r for r in memory.rows(snap, ctx()) if r.node == "node1"]

    before, after = with_pss(5 * fx.MiB, 4 * fx.MiB), with_pss(4 * fx.MiB, 5 * fx.MiB)
    assert [r.key for r in before] == [r.key for r in after]
    assert before[-1].cells["pid"].text == "200" and after[-1].cells["pid"].text == "201"


def test_memory_rows_are_the_same_objects_until_a_process_changes() -> None:
    # Between memory reads (every 15 s on the dashboard) the same rows come back as the same
    # objects, which the table skips without comparing cells (issue 10).
    snap = fx.healthy()
    first, again = memory.rows(snap, ctx()), memory.rows(snap, ctx())
    procs = [r for r in first if "|#" in r.key]
    assert procs and all(a is b for a, b in zip(procs, [r for r in again if "|#" in r.key], strict=True))
    node1 = snap.nodes[0]
    busier = node1.processes[0].model_copy(update={"state": "active"})
    node1 = node1.model_copy(update={"processes": (busier, *node1.processes[1:])})
    changed = snap.model_copy(update={"nodes": (node1, *snap.nodes[1:])})
    moved = {r.key: r for r in memory.rows(changed, ctx())}
    assert any(moved[r.key] is not r and moved[r.key].cells["state"].text == "active" for r in procs)


def test_same_inputs_give_back_their_rows_only_for_the_very_same_objects() -> None:
    memo, built = SameInputs(), []
    a, b = fx.healthy(), fx.healthy()  # equal, not the same objects

    def build() -> list[Row]:
        built.append(1)
        return memory.rows(a, ctx())

    first = memo.rows("node1", (a, "x"), build)
    first.clear()  # a caller's list is its own, the built one and each given back
    again = memo.rows("node1", (a, "x"), build)
    assert len(built) == 1 and again == memory.rows(a, ctx())
    again.clear()
    assert memo.rows("node1", (a, "x"), build) == memory.rows(a, ctx()) and len(built) == 1
    memo.rows("node1", (b, "x"), build)  # equal is not enough: identity or a new build
    memo.rows("node1", (b, "x", "y"), build)
    memo.rows("node2", (b, "x", "y"), build)
    assert len(built) == 4


def test_memory_rows_are_not_built_again_while_a_nodes_processes_are_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []
    real = memory._node_rows

    def counted(node: NodeSnapshot, huge: tuple[Mark, ...]) -> list[Row]:
        built.append(node.name)
        return real(node, huge)

    monkeypatch.setattr(memory, "_node_rows", counted)
    snap = fx.healthy()
    first = memory.rows(snap, ctx())
    n = len(built)
    assert memory.rows(snap.model_copy(update={"taken_at": NOW}), ctx()) == first
    assert len(built) == n  # the same process models: nothing to build
    node1 = snap.nodes[0]
    grown = node1.processes[0].model_copy(update={"pss_bytes": 900 * fx.MiB})
    node1 = node1.model_copy(update={"processes": (grown, *node1.processes[1:])})
    moved = memory.rows(snap.model_copy(update={"nodes": (node1, *snap.nodes[1:])}), ctx())
    assert built[n:] == ["node1"]
    assert "900 MiB" in [c.text for r in moved if r.node == "node1" for c in r.cells.values()]


def test_reach_says_slow_not_unreachable() -> None:
    snap = fx.healthy()
    members = tuple(m.model_copy(update={"slow_s": 1.6}) if m.name == "node1" else m for m in snap.members)
    shown = texts(cluster.rows(snap.model_copy(update={"members": members}), ctx()))
    assert shown["node1"][10] == "▲ REST slow 2s"
    down = tuple(m.model_copy(update={"reachable": False}) if m.name == "node1" else m for m in snap.members)
    assert shown["node2"][10] == "ok"
    assert texts(cluster.rows(snap.model_copy(update={"members": down}), ctx()))["node1"][10].startswith(
        "✖ REST"
    )


def test_rows_are_the_same_objects_while_what_they_show_stays() -> None:
    # Row builders are cached on their inputs (panes/base.py, ROWS_KEPT): a second later, with
    # every age still in the same shown step, each pane hands back the very same rows, which
    # the table skips unread (issue 10). An age crossing its step makes a new row that shows it.
    snap = fx.healthy()
    ages = snap.haproxy.model_copy(
        update={"servers": tuple(s.model_copy(update={"last_change_s": 34}) for s in snap.haproxy.servers)}
    )
    snap = snap.model_copy(update={"haproxy": ages})
    history = (fx.healthy(at=fx.T0 - timedelta(seconds=1)),)
    for pane in (cluster, haproxy, replication, slots, archiver, problems, memory, overview):
        for table in pane.PANE.tables:
            seen = (fx.event("node2", "joined"),)
            first = table.rows(snap, ctx(history=history, events=seen))
            again = table.rows(snap, ctx(history=history, events=seen, now=NOW + timedelta(seconds=1)))
            assert all(a is b for a, b in zip(first, again, strict=True)), table.id
            assert first or table.id == "overview", table.id  # healthy: no alerts above the members
    same_step = snap.haproxy.model_copy(
        update={"servers": tuple(s.model_copy(update={"last_change_s": 39}) for s in snap.haproxy.servers)}
    )
    assert (
        haproxy.rows(snap.model_copy(update={"haproxy": same_step}), ctx())[1] is haproxy.rows(snap, ctx())[1]
    )
    moved = snap.haproxy.model_copy(
        update={"servers": tuple(s.model_copy(update={"last_change_s": 61}) for s in snap.haproxy.servers)}
    )
    now_rows = haproxy.rows(snap.model_copy(update={"haproxy": moved}), ctx())
    assert now_rows[1] is not haproxy.rows(snap, ctx())[1] and now_rows[1].cells["lastchg"].text == "1m"


def _idle(snap: ClusterSnapshot) -> ClusterSnapshot:
    """``snap`` with node1's walsenders' lag times NULL, as PostgreSQL shows them once no WAL comes."""
    idle = {"write_lag_s": None, "flush_lag_s": None, "replay_lag_s": None}
    nodes = tuple(
        n.model_copy(update={"replication": tuple(r.model_copy(update=idle) for r in n.replication)})
        if n.name == "node1"
        else n
        for n in snap.nodes
    )
    return snap.model_copy(update={"nodes": nodes})


def test_lag_times_of_a_caught_up_replica_are_zero_not_unknown() -> None:
    # PostgreSQL shows each stage's lag time NULL once a standby has caught up and no WAL comes:
    # beside "0 B" the overview and the Replication pane said "-" for every replica of a quiet
    # cluster.
    quiet = _idle(fx.healthy())
    live = ctx(now=quiet.taken_at)  # each standby replied a second or two ago
    rows = {r.key: r.cells for r in overview.member_rows(quiet, live)}
    lag_s = {key: cells["lag_s"].text for key, cells in rows.items()}
    assert lag_s["node2"] == "0"  # 0 B behind: nothing to replay
    assert lag_s["node3"] == "-"  # 2 MiB behind with no measured time: unknown, not 0
    assert lag_s["node1"] == "-"  # the leader has no replay lag
    stages = {
        r.key: [r.cells[c].text for c in ("write_s", "flush_s", "replay_s")]
        for r in replication.rows(quiet, live)
    }
    assert stages["node1|node2"] == ["0", "0", "0"]
    # node3 has written and flushed everything but has 2 MiB to replay: only replay is unknown.
    assert stages["node1|node3"] == ["0", "0", "-"]
    assert {r.key: r.cells["health"].text for r in replication.rows(quiet, live)}["node1|node2"] == "✔ OK"


def test_a_standby_that_stopped_replying_is_not_caught_up_in_time() -> None:
    # A replica frozen in a failure test: its walsender on the leader still said streaming with
    # 0 B behind (what it last heard) until wal_sender_timeout, and the overview said "Lag t 0"
    # beside its DOWN for that minute. Past two status intervals without a reply, unknown.
    quiet = _idle(fx.healthy())
    leader = quiet.node("node1")
    assert leader is not None
    node2_reply = next(r.reply_time for r in leader.replication if r.application_name == "node2")
    assert node2_reply is not None
    for after, said, health in ((19, "0", "✔ OK"), (21, "-", "▲ WARN")):
        # The same walsender row read later: judged as of its reading, shown at the screen's time.
        read = quiet.model_copy(update={"taken_at": node2_reply + timedelta(seconds=after)})
        at = ctx(now=read.taken_at)
        lag_s = {r.key: r.cells["lag_s"].text for r in overview.member_rows(read, at)}
        assert lag_s["node2"] == said, (after, lag_s)
        walsender = {r.key: r for r in replication.rows(read, at)}["node1|node2"]
        assert [walsender.cells[c].text for c in ("write_s", "flush_s", "replay_s")] == [said] * 3
        assert walsender.cells["health"].text == health
        assert walsender.cells["sent"].text == "0 B"  # the walsender's own word stays, as PostgreSQL says it


def test_overview_route_reads_haproxys_transition_states_as_the_cluster_pane_does() -> None:
    # A frozen leader: one check failed, HAProxy says "UP 1/2" and still sends it writes. The
    # overview's Route said "-" beside a banner saying HAProxy still routes writes to it.
    snap = fx.kill_primary()
    steps = {
        ("pg_writer", "node1"): "UP 1/2",
        ("pg_reader", "node2"): "DOWN 1/2",
        ("pg_reader", "node3"): "NOLB",
    }
    servers = tuple(
        s.model_copy(update={"status": steps.get((s.proxy, s.server), s.status)})
        for s in snap.haproxy.servers
    )
    snap = snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})
    route = {r.key: r.cells["route"] for r in overview.member_rows(snap, ctx())}
    assert route["node1"].text == "W" and route["node1"].level == Level.CRIT  # writes to a dead PG
    assert route["node2"].text == "-"  # DOWN 1/2: coming back, not yet taking reads
    assert route["node3"].text == "-"  # NOLB: no new sessions


def test_overview_says_the_same_problem_on_several_members_once() -> None:
    # Patroni's copies of a permanent slot retain the same WAL on each member: three of the
    # four problem lines at 80x24 said it three times, and the archiver's failure fell off.
    def retaining(snap: ClusterSnapshot, sizes: dict[str, int]) -> ClusterSnapshot:
        nodes = tuple(
            n.model_copy(
                update={
                    "slots": tuple(
                        s.model_copy(update={"retained_bytes": sizes[n.name]})
                        if s.slot_name == "lab_sub"
                        else s
                        for s in n.slots
                    )
                }
            )
            if n.name in sizes
            else n
            for n in snap.nodes
        )
        return snap.model_copy(update={"nodes": nodes})

    gib = 3 * 1024**3
    three = retaining(fx.healthy(), {"node1": gib, "node2": gib, "node3": gib})
    rows = overview.alert_rows(three, ctx())
    said = [r.cells["text"].text for r in rows]
    assert said == ["node1, node2, node3: slot lab_sub retains 3.0 GiB"], said
    assert matches(rows[0], "node3") and not matches(rows[0], "node9")
    seven = fx.grown(three, 7)
    assert [r.cells["text"].text for r in overview.alert_rows(seven, ctx())] == [
        "node1 +6: slot lab_sub retains 3.0 GiB"
    ]
    # Figures that differ are different lines: each member's own.
    apart = retaining(fx.healthy(), {"node1": gib, "node2": 2 * gib, "node3": gib})
    assert {r.cells["text"].text for r in overview.alert_rows(apart, ctx())} == {
        "node1, node3: slot lab_sub retains 3.0 GiB",
        "node2: slot lab_sub retains 6.0 GiB",
    }


def test_overview_event_text_takes_the_room_short_node_names_leave() -> None:
    text = "replication pid 26920: startup from node2 — for 0.3 s, then a few more words"
    evs = [fx.event("node3", text)]
    row = overview.event_rows(fx.healthy(), ctx(events=evs))[0]
    shown_text = row.cells["text"].text
    assert shown_text.startswith("replication pid 26920: startup from node2 — for 0.3 s")
    # Time (8), Node (5) and the text fit the 78 columns inside the pane's border.
    used = 8 + len(row.cells["node"].text) + len(shown_text) + 3 * 2
    assert len(shown_text) > 52 and used <= 78
    long = [fx.event("n" * 30, text)]
    row = overview.event_rows(fx.healthy(), ctx(events=long))[0]
    assert len(row.cells["node"].text) <= overview.NODE_WIDTH
    assert 8 + len(row.cells["node"].text) + len(row.cells["text"].text) + 3 * 2 <= 78


def test_an_event_row_does_not_name_its_node_twice() -> None:
    # Checks say "node1: PostgreSQL is primary, ..." and the Node column says node1 already.
    evs = [
        fx.event("node1", "node1: PostgreSQL is primary, Patroni says replica"),
        fx.event("node2", "node1: still routed"),  # another node named: kept
        fx.event("node1", "x").model_copy(
            update={"node": None, "text": "marker: before the kill"}
        ),  # no node
    ]
    pane = [r.cells["text"].text for r in events.rows(fx.healthy(), ctx(events=evs))]
    over = [r.cells["text"].text for r in overview.event_rows(fx.healthy(), ctx(events=evs))]
    for texts_ in (pane, over):
        assert texts_ == [
            "marker: before the kill",
            "node1: still routed",
            "PostgreSQL is primary, Patroni says replica",
        ]
    assert evs[0].text.startswith("node1: ")  # the event itself (recordings, reports) keeps it


def test_overview_cuts_an_events_text_never_how_long_it_lasted() -> None:
    # "PostgreSQL down on the leader, HAProxy still routes writes…" lost its "— for 2.4 s" at
    # 80 columns: how long a state lasted is what the report after a failure test needs.
    text = "PostgreSQL down on the leader, HAProxy still routes writes to it, and a few more words"
    ev = fx.event("node3", text).model_copy(update={"id": 7, "duration_s": 2.4})
    row = overview.event_rows(fx.healthy(), ctx(events=[ev]))[0]
    shown_text = row.cells["text"].text
    assert shown_text.startswith("PostgreSQL down on the leader") and "…" in shown_text
    assert shown_text.endswith(" — for 2.4 s")
    assert 8 + len("node3") + len(shown_text) + 3 * 2 <= 78  # inside the pane's border
    # The Events pane has a column for it, before the whole text.
    cells = events.rows(fx.healthy(), ctx(events=[ev]))[0].cells
    assert (cells["lasted"].text, cells["text"].text) == ("2.4 s", text)


def test_a_state_that_lasted_under_a_tenth_of_a_second_is_not_said_to_last_zero() -> None:
    # After a thaw, Patroni's REST answered a few ms past the cycle's budget: "— for 0.0 s".
    ev = fx.event("node2", "Patroni REST slow (last answer kept)")
    assert events.lasted(ev.model_copy(update={"duration_s": 0.004})) == " — for <0.1 s"
    assert events.lasted(ev.model_copy(update={"duration_s": 0.05})) == " — for 0.1 s"
    assert events.lasted(ev.model_copy(update={"duration_s": 0.3})) == " — for 0.3 s"


def test_overview_says_one_change_on_every_member_once() -> None:
    # A parameter pending restart on every member: three (or seven) identical lines at 80x24.
    at = fx.T0 + timedelta(seconds=3)
    evs = [
        fx.event(n, "pending restart", at).model_copy(update={"id": 40 + i})
        for i, n in enumerate(("node1", "node2", "node3"))
    ]
    rows = overview.event_rows(fx.healthy(), ctx(events=evs))
    assert [(r.cells["node"].text, r.cells["text"].text) for r in rows] == [("all", "pending restart")]
    assert matches(rows[0], "node2")
    # Part of the members stay a line each: a label wider than a name ("node2 +1") widened the
    # Node column, which keeps its width a while, and the texts cut for the narrower one ran past
    # the pane's border.
    two = overview.event_rows(fx.healthy(), ctx(events=evs[:2]))
    assert [(r.cells["node"].text, r.cells["text"].text) for r in two] == [
        ("node2", "pending restart"),
        ("node1", "pending restart"),
    ]
    # Another second, other words or the same member twice stay lines of their own.
    later = evs[2].model_copy(update={"at": at + timedelta(seconds=1), "id": 50})
    other = evs[1].model_copy(update={"text": "pending restart — max_connections", "id": 51})
    again = evs[0].model_copy(update={"id": 52})
    for apart in ([evs[0], later], [evs[0], other], [evs[0], again]):
        assert len(overview.event_rows(fx.healthy(), ctx(events=apart))) == 2
    # Each Patroni applies /config in its own loop: read live, 10:13:38, 10:13:38 and 10:13:39
    # were three lines. Within a loop_wait it is one, at the first member's time.
    spread = [evs[0], evs[1], later]
    rows = overview.event_rows(fx.healthy(), ctx(events=spread))
    assert [(r.cells["node"].text, r.cells["text"].text) for r in rows] == [("all", "pending restart")]
    assert rows[0].cells["time"].text == events.event_row(evs[0]).cells["time"].text
    beyond = later.model_copy(update={"at": at + timedelta(seconds=overview.MERGE_WITHIN_S + 1)})
    assert len(overview.event_rows(fx.healthy(), ctx(events=[evs[0], evs[1], beyond]))) == 3
    # Undone, each says how long it lasted, a second apart: still one line, the longest.
    ended = at + timedelta(seconds=140)
    over = [
        e.model_copy(update={"ended_at": ended, "duration_s": (ended - e.at).total_seconds()}) for e in spread
    ]
    rows = overview.event_rows(fx.healthy(), ctx(events=over))
    assert [(r.cells["node"].text, r.cells["text"].text) for r in rows] == [
        ("all", "pending restart — for 140.0 s")
    ]
    # One member's still pending is not the same as the others' over.
    assert len(overview.event_rows(fx.healthy(), ctx(events=[*over[:2], later]))) == 3


def test_overview_event_texts_are_cut_for_the_widest_member_not_the_widest_shown() -> None:
    # The Node column keeps its width a while after its widest cell leaves the list (the table's
    # SHRINK_AFTER_S): texts cut for the narrower names shown then ran past the pane's border
    # (seen live at 80x24, a horizontal scrollbar under the events).
    snap = fx.renamed(fx.healthy(), ("db1", "db2", "db-replica-9"))
    long_text = "writes through HAProxy reach the leader db2 again: outage of 1.2 s, and more words"
    ev = Event(at=fx.T0, kind="action", node="db1", text=long_text, severity=1, id=70)
    row = overview.event_rows(snap, ctx(events=[ev]))[0]
    widest = len(fit_name("db-replica-9", ["db1", "db2", "db-replica-9"], overview.NODE_WIDTH))
    assert len(row.cells["text"].text) == overview.EVENT_ROOM - widest, row.cells["text"].text


def test_event_rows_are_the_same_objects_until_an_event_changes() -> None:
    # After an incident the timeline keeps 500 events: their rows were built again every second.
    evs = [fx.event("node1", f"change {i}").model_copy(update={"id": 9000 + i}) for i in range(40)]
    first = events.rows(fx.healthy(), ctx(events=tuple(evs)))
    again = events.rows(fx.healthy(), ctx(events=tuple(evs), now=NOW + timedelta(seconds=1)))
    assert all(a is b for a, b in zip(first, again, strict=True))
    # A flip back updates an event in place (same id, a new object): its row says so, at once.
    evs[5] = evs[5].model_copy(update={"duration_s": 3.0})
    later = events.rows(fx.healthy(), ctx(events=tuple(evs)))
    by_key = {r.key: r for r in later}
    assert by_key["#9005"].cells["lasted"].text == "3.0 s"
    assert [r for r in later if r is not by_key["#9005"]] == [r for r in first if r.key != "#9005"]
    assert all(a is b for a, b in zip(first, later, strict=True) if a.key != "#9005")
    over = overview.event_rows(fx.healthy(), ctx(events=tuple(evs)))
    assert over[34].key == "#9005" and over[34].cells["text"].text.endswith("— for 3.0 s")


def test_a_standbys_own_view_names_its_upstream_as_a_member() -> None:
    # The leader frozen: no primary reports its standbys, so their rows come from their own WAL
    # receivers, and the From column read "…0.0.1:25410" beside "node1" everywhere else.
    snap = fx.healthy()

    def receiving(host: str, port: int) -> ClusterSnapshot:
        nodes = tuple(
            n.model_copy(update={"reachable": False, "replication": ()})
            if n.name == "node1"
            else n.model_copy(
                update={"wal_receiver": WalReceiver(status="streaming", sender_host=host, sender_port=port)}
            )
            for n in snap.nodes
        )
        return snap.model_copy(update={"nodes": nodes})

    rows = {r.key: r for r in replication.rows(receiving("127.0.0.1", 25410), ctx())}
    assert rows["?|node2"].cells["upstream"].text == "node1"
    assert rows["?|node3"].cells["upstream"].text == "node1"
    # A sender no member listens at stays its address.
    rows = {r.key: r for r in replication.rows(receiving("10.9.9.9", 6432), ctx())}
    assert rows["?|node2"].cells["upstream"].text == "10.9.9.9:6432"


def test_overview_leaves_out_a_slowness_that_became_unreachable() -> None:
    # `lab fault stop-patroni node2`, `crash`: "Patroni REST slow (last answer kept) — for 0.2 s"
    # above "Patroni REST unreachable" in the same second, two of the overview's few lines for
    # one thing. A slowness that ended in an answer stays (a switchover's 1.1 s wait).
    tl = Timeline()
    tl.observe(fx.healthy(fx.T0 + timedelta(seconds=1)))
    slow = fx.frozen(fx.T0 + timedelta(seconds=5))
    tl.observe(slow)
    gone = slow.model_copy(
        update={
            "taken_at": fx.T0 + timedelta(seconds=6),
            "members": tuple(
                m.model_copy(update={"reachable": False, "slow_s": None, "error": "refused"})
                if m.name == "node3"
                else m
                for m in slow.members
            ),
        }
    )
    tl.observe(gone)
    evs = tuple(tl.events())
    texts_all = [e.text for e in evs]
    assert "Patroni REST slow (last answer kept)" in texts_all and "Patroni REST unreachable" in texts_all
    shown_texts = [r.cells["text"].text for r in overview.event_rows(gone, ctx(events=evs))]
    assert "Patroni REST unreachable" in shown_texts
    assert not any(t.startswith("Patroni REST slow") for t in shown_texts), shown_texts
    # PostgreSQL still only slow: its line stays; the Events pane keeps every one.
    assert any(t.startswith("PostgreSQL slow") for t in shown_texts), shown_texts
    assert len(events.rows(gone, ctx(events=evs))) == len(evs)


def test_slots_and_locks_past_their_row_caps_say_how_many_more() -> None:
    snap = fx.healthy()
    n1 = snap.node("node1")
    assert n1 is not None
    nodes = tuple(
        n.model_copy(update={"slots_total": len(n1.slots) + 700, "locks": (), "locks_total": 250})
        if n.name == "node1"
        else n
        for n in snap.nodes
    )
    capped = snap.model_copy(update={"nodes": nodes})
    slot_rows = [r for r in slots.rows(capped, ctx()) if r.key == "node1|more"]
    lock_rows = [r for r in locks.rows(capped, ctx()) if r.key == "node1|more"]
    assert [r.cells["slot"].text for r in slot_rows] == ["+700 more slots"]
    assert [r.cells["pid"].text for r in lock_rows] == ["+250 more"]
    assert not [r for r in slots.rows(snap, ctx()) if r.key.endswith("|more")]


def test_overview_orders_events_by_when_they_happened_as_the_events_pane_does() -> None:
    # A stopwatch's event is stored when the outage ends, stamped at its first failed write.
    later = fx.event("node1", "PostgreSQL unreachable", fx.T0 + timedelta(seconds=1)).model_copy(
        update={"id": 1}
    )
    outage = fx.event("node1", "write outage 5.3 s", fx.T0).model_copy(update={"id": 2})
    evs = [later, outage]
    over = [r.cells["text"].text for r in overview.event_rows(fx.healthy(), ctx(events=evs))]
    assert over == ["PostgreSQL unreachable", "write outage 5.3 s"]


@pytest.mark.parametrize(
    "pane", [slots, horizon, memory, replication, progress, waits], ids=lambda p: p.PANE.id
)
def test_a_member_postgres_did_not_answer_is_not_read_never_an_empty_gap(pane: Any) -> None:
    # An empty Slots or Progress pane while the primary is down read as "none there".
    by_key = {r.key: r for r in pane.PANE.rows_of(fx.kill_primary(), ctx())}
    row = by_key["node1|not-read"]
    shown = [c.text for c in row.cells.values() if c.text]
    assert shown[0] == "node1" and NOT_READ in shown
    assert "node2|not-read" not in by_key  # a member that answered has its own rows


def test_with_postgresql_off_every_pane_that_needs_it_says_so_per_member() -> None:
    off = fx.healthy().model_copy(update={"nodes": (), "postgres_read": False})
    members = sorted(m.name for m in off.members)
    for spec in PANES:
        if not (spec.per_member or spec.postgres):
            continue
        said = [r for t in spec.tables for r in t.rows_of(off, ctx()) if r.key.endswith("|not-read")]
        assert sorted(r.node or "" for r in said) == members, spec.id
        assert all(any(c.text == POSTGRES_OFF for c in r.cells.values()) for r in said), spec.id
    # Read as usual, no member says so.
    assert not [r for r in archiver.PANE.rows_of(fx.healthy(), ctx()) if r.key.endswith("|not-read")]
