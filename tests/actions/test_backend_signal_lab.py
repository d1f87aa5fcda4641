"""A hand on the blocker against the real lab: a lock queue seen in Sessions, its root terminated."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from pgtop_ha.actions import Actions, build_actions
from pgtop_ha.actions.backend_signal import backend_target
from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.judge.rules import SESSIONS_LONG_TRANSACTION
from pgtop_ha.lab import faults, secrets
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import APP_USER, DBNAME, OPERATOR_USER, SUPERUSER
from pgtop_ha.models.locks import blocking_trees
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Band
from pgtop_ha.settings import Settings
from pgtop_ha.ui.panes import sessions
from pgtop_ha.ui.panes.base import Context
from tests.support.lab_polls import running, until_seen

pytestmark = pytest.mark.lab

HOLDER = faults.LOCK_HOLDER_APP
SU_APP = "pgtop-test-superuser"


@pytest.fixture
async def actions(lab_settings: Settings, tmp_path: Path) -> AsyncIterator[Actions]:
    """The lab's own operator role: pg_signal_backend, no superuser."""
    built = build_actions(lab_settings.model_copy(update={"audit_log": tmp_path / "audit.log"}))
    yield built
    await built.aclose()


async def test_terminating_the_root_blocker_ends_the_queue(
    lab: Lab, lab_settings: Settings, actions: Actions
) -> None:
    # A transaction open past 10 s is a long one here: the rule must name the holder.
    t = lab_settings.thresholds.model_copy(update={"xact_s": Band(warn=10.0, crit=3600.0)})
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"locks", "sessions"}))
    quiet = Lab(lab.layout, out=io.StringIO())
    leader = lab.leader()
    assert leader is not None
    su: asyncpg.Connection | None = None
    try:
        with running(lambda: faults.lock(quiet, seconds=60, waiters=2), 90):

            def queued(snap: ClusterSnapshot) -> bool:
                node = snap.node(leader)
                lines = blocking_trees(node.locks or ()) if node else []
                holder = [x for x in (node.open_transactions if node else ()) if x.xact_s and x.xact_s > 11]
                return sum(1 for x in lines if x.depth > 0) >= 2 and bool(holder)

            snap = await until_seen(poller, queued, 45, "the lock queue, its holder open past 10 s")
            node = snap.node(leader)
            assert node is not None
            root = next(x for x in blocking_trees(node.locks or ()) if x.depth == 0)
            pid = root.process.pid
            assert root.process.application_name == HOLDER
            # Sessions: the holder runs longest, so it is the leader's first row; its xact is marked.
            ctx = Context(thresholds=t, pools=lab_settings.haproxy.pools(), now=snap.taken_at)
            rows = [r for r in sessions.rows(snap, ctx) if r.node == leader]
            assert rows[0].key == f"{leader}|{pid}" and rows[0].cells["app"].text == HOLDER
            assert rows[0].cells["xact"].level is not None
            assert sessions.backend_of(rows[0].key) == (leader, pid)
            problems = cluster_problems(snap, t, lab_settings.haproxy.pools(), snap.taken_at)
            assert any(p.rule == SESSIONS_LONG_TRANSACTION.id and f"pid {pid} " in p.text for p in problems)

            target = backend_target(snap, leader, pid)
            assert target is not None and (target.application_name, target.usename) == (HOLDER, APP_USER)

            # A superuser's session beside the queue (idle in a transaction, so it is listed): out
            # of the operator role's reach.
            su = await asyncpg.connect(
                host="127.0.0.1", port=lab.layout.pg_port(lab.index(leader)), user=SUPERUSER,
                password=secrets.ensure(lab.layout)[SUPERUSER], database=DBNAME,
                server_settings={"application_name": SU_APP},
            )  # fmt: skip
            await su.execute("begin; select txid_current()")

            def su_seen(snap: ClusterSnapshot) -> bool:
                n = snap.node(leader)
                return any(p.application_name == SU_APP for p in (n.processes if n else ()))

            later = await until_seen(poller, su_seen, 20, "the superuser's session")
            seen = later.node(leader)
            assert seen is not None
            su_pid = next(p.pid for p in seen.processes if p.application_name == SU_APP)
            su_target = backend_target(later, leader, su_pid)
            assert su_target is not None
            refused = await actions.signal_backend("terminate", su_target)
            assert not refused.ok and "\n" not in refused.message
            assert refused.message.startswith(f"{OPERATOR_USER} may not signal pid {su_pid} on {leader}: ")
            assert refused.message.endswith("a superuser's backend takes a superuser")
            result = await actions.signal_backend("terminate", target)
            assert result.ok, result.message
            assert result.message == f"pid {pid} on {leader} was terminated"

            def drained(snap: ClusterSnapshot) -> bool:
                n = snap.node(leader)
                return n is not None and n.locks is not None and not blocking_trees(n.locks)

            await until_seen(poller, drained, 30, "the queue to drain once its root is gone")
            entry = actions.audit_entries()[-1]
            done = (entry.action, entry.target, entry.ok)
            assert done == (f"terminate backend {pid} ({APP_USER} {HOLDER})", leader, True)
            # The same pid again: gone, nothing sent.
            again = await actions.signal_backend("cancel", target)
            assert (again.ok, again.message) == (
                False,
                f"pid {pid} on {leader} has already gone; nothing sent",
            )
    finally:
        if su is not None:
            await su.close()  # its backend, waiting on this client, ends with the connection
        await poller.aclose()
