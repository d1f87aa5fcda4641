"""The workload on a real lab: a runaway query leads Sessions and Statements; not read when unasked."""

from __future__ import annotations

import asyncio
import threading

import asyncpg
import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.judge.rules import LOG_FATAL
from pgtop_ha.judge.serverlog import FATAL_PERSIST_S
from pgtop_ha.lab import secrets
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import DBNAME, MONITOR_USER, SUPERUSER
from pgtop_ha.models.derive import listed_processes
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from pgtop_ha.ui.panes import sessions
from pgtop_ha.ui.panes.base import Context
from tests.support.lab_polls import running, until_seen

pytestmark = pytest.mark.lab

RUNAWAY = "select pg_sleep(2.5) /* pgtop-ha runaway */"  # a comment survives normalising


async def test_a_runaway_query_leads_sessions_and_statements(lab: Lab, lab_settings: Settings) -> None:
    leader = lab.leader()
    assert leader is not None
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"sessions", "statements"}))

    seen = threading.Event()

    def runaway() -> str:
        for _ in range(12):  # one statement after another for 30 s: most of a second per second
            if seen.is_set():
                break
            lab.psql(RUNAWAY, leader)
        return "done"

    try:
        with running(runaway, 90):

            def led(snap: ClusterSnapshot) -> bool:
                node = snap.node(leader)
                st = node.statements if node else None
                return bool(st and st.top and "pgtop-ha runaway" in (st.top[0].query or ""))

            snap = await until_seen(poller, led, 45, "the runaway statement at the top of Statements")
            node = snap.node(leader)
            assert node is not None and node.statements is not None
            top = node.statements.top[0]
            over = node.statements.over_s
            assert over is not None and over >= 5
            # A call's time counts when it ends: a window can hold one more end than its length.
            assert 0.3 < top.time_ms_s / 1000 <= 1 + 2.5 / over and top.mean_ms is not None
            assert top.mean_ms >= 2400
            assert top.datname == DBNAME and top.usename == SUPERUSER  # named from pg_database, pg_roles

            def busy(snap: ClusterSnapshot) -> bool:
                n = snap.node(leader)
                return n is not None and any(p.query and "pgtop-ha runaway" in p.query for p in n.processes)

            snap = await until_seen(poller, busy, 10, "the runaway in pg_stat_activity")
            ctx = Context(
                thresholds=lab_settings.thresholds, pools=lab_settings.haproxy.pools(), now=snap.taken_at
            )
            first = next(r for r in sessions.rows(snap, ctx) if r.node == leader)
            assert "pgtop-ha runaway" in first.cells["query"].text
            assert first.cells["time"].text not in ("-", "?")
            # The console's own statement began after its transaction: still no negative age.
            mine = [p for n in snap.nodes for p in n.processes if p.application_name == "pgtop-ha"]
            assert mine and all((p.query_s or -1) >= 0 and (p.state_s or -1) >= 0 for p in mine)
            seen.set()  # the runaway ends after its current statement
    finally:
        await poller.aclose()


IDLE_APP = "pgtop-ha idle test"


async def test_idle_sessions_are_counted_not_listed(lab: Lab, lab_settings: Settings) -> None:
    leader = lab.leader()
    assert leader is not None
    port, pw = lab.layout.pg_port(lab.index(leader)), secrets.ensure(lab.layout)[SUPERUSER]
    app = {"application_name": IDLE_APP}
    conns = [
        await asyncpg.connect(
            host="127.0.0.1", port=port, user=SUPERUSER, password=pw, database=DBNAME, server_settings=app
        )
        for _ in range(6)
    ]
    await conns[0].execute("begin; select txid_current()")  # idle in a transaction: listed
    # An idle session holding a session-level advisory lock, and a session waiting for it.
    holder = await conns[1].fetchval("select pg_backend_pid() from (select pg_advisory_lock(5505)) l")
    waiter = asyncio.get_running_loop().create_task(conns[2].fetchval("select pg_advisory_lock(5505)"))
    poller = Poller.from_settings(lab_settings)
    try:
        reads: tuple[Needs, ...] = (frozenset({"sessions"}), frozenset({"sessions", "locks"}))
        for needs in reads:
            poller.set_needs(needs)

            def read(snap: ClusterSnapshot, locks: bool = "locks" in needs) -> bool:
                n = snap.node(leader)
                if n is None or not any(
                    p.application_name == IDLE_APP and p.wait_event_type == "Lock" for p in n.processes
                ):
                    return False
                return not locks or any(x.pid == holder for x in n.locks or ())

            snap = await until_seen(poller, read, 30, f"the sessions with {sorted(needs)}")
            node = snap.node(leader)
            assert node is not None and node.idle_sessions is not None and node.idle_sessions >= 4
            mine = sorted(str(p.state) for p in node.processes if p.application_name == IDLE_APP)
            assert mine == ["active", "idle in transaction"]
            assert not any(p.backend_type == "client backend" and p.state == "idle" for p in node.processes)
            # Every backend of the same read is either listed or counted as idle, none twice.
            assert node.processes_total == listed_processes(node)
        # The lock tree names its idle root blocker: the read keeps idle sessions for it.
        assert node is not None
        root = next(x for x in (node.locks or ()) if x.pid == holder)
        assert (root.state, root.application_name, root.blocked_by) == ("idle", IDLE_APP, ())
    finally:
        await poller.aclose()
        for c in conns:
            await c.close()
        await asyncio.gather(waiter, return_exceptions=True)


async def test_sessions_and_statements_are_not_read_unasked(lab: Lab, lab_settings: Settings) -> None:
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset())
    try:
        snap = await until_seen(poller, lambda s: all(n.reachable for n in s.nodes), 30, "every node")
        for n in snap.nodes:
            assert n.statements is None and "statements" in n.unavailable
            assert "sessions" in n.unavailable
            assert all(p.xact_s is None and p.client_addr is None for p in n.processes)
    finally:
        await poller.aclose()


async def test_a_fatal_in_the_servers_log_is_an_event(lab: Lab, lab_settings: Settings) -> None:
    leader = lab.leader()
    assert leader is not None
    poller = Poller.from_settings(lab_settings)
    timeline = Timeline()
    try:
        await until_seen(
            poller,
            lambda s: (n := s.node(leader)) is not None and n.server_log is not None,
            30,
            "the log read",
        )
        # A client with a wrong password: the server logs a FATAL for it, then rotates its log.
        port = lab.layout.pg_port(lab.index(leader))
        with pytest.raises(asyncpg.InvalidPasswordError):
            await asyncpg.connect(
                host="127.0.0.1", port=port, user=MONITOR_USER, password="wrong", database=DBNAME
            )
        lab.psql("select pg_rotate_logfile()", leader)

        def told(snap: ClusterSnapshot) -> bool:
            timeline.observe(snap)
            return any(
                e.kind == "log" and "password authentication failed" in e.text for e in timeline.events()
            )

        snap = await until_seen(poller, told, 60, "the FATAL on the timeline")
        event = next(e for e in timeline.events() if e.kind == "log" and "password authentication" in e.text)
        assert (event.node, event.severity, event.source) == (leader, 1, "postgres")
        assert event.at <= snap.taken_at and event.text.startswith("FATAL: ")
        problems = cluster_problems(
            snap, lab_settings.thresholds, lab_settings.haproxy.pools(), snap.taken_at
        )
        # One FATAL is news, not a verdict: only one that keeps coming is (judge/serverlog.py).
        # Other FATALs in the same log (sessions an earlier client ended) are not this test's.
        node = snap.node(leader)
        log = node.server_log if node else None
        runs = [r for r in log.fatal_runs if "password authentication" in r.message] if log else []
        assert runs and (runs[-1].last_at - runs[-1].first_at).total_seconds() < FATAL_PERSIST_S
        assert not any(p.rule == LOG_FATAL.id and "password authentication" in p.text for p in problems)
    finally:
        await poller.aclose()
