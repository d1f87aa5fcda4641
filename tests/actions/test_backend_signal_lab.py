"""A hand on the blocker against the real lab: a lock queue seen in Sessions, its root terminated."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pgtop_ha.actions import Actions, build_actions
from pgtop_ha.actions.backend_signal import backend_target
from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.judge.rules import SESSIONS_LONG_TRANSACTION
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import OPERATOR_USER, SUPERUSER
from pgtop_ha.models.locks import blocking_trees
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Band
from pgtop_ha.settings import Settings
from pgtop_ha.ui.panes import sessions
from pgtop_ha.ui.panes.base import Context
from tests.support.lab_polls import running, until_seen

pytestmark = pytest.mark.lab

HOLDER = "lab-fault-lock-holder"


@pytest.fixture
async def actions(lab_settings: Settings, tmp_path: Path) -> AsyncIterator[Actions]:
    """The operator's actions as the lab's superuser (the lock fault's sessions are a superuser's)."""
    postgres = lab_settings.postgres.model_copy(update={"operator_user": SUPERUSER})
    built = build_actions(
        lab_settings.model_copy(update={"audit_log": tmp_path / "audit.log", "postgres": postgres})
    )
    yield built
    await built.aclose()


@pytest.fixture
async def plain_actions(lab_settings: Settings, tmp_path: Path) -> AsyncIterator[Actions]:
    """The lab's own operator role: no superuser, so a superuser's backend is out of its reach."""
    built = build_actions(lab_settings.model_copy(update={"audit_log": tmp_path / "plain.log"}))
    yield built
    await built.aclose()


async def test_terminating_the_root_blocker_ends_the_queue(
    lab: Lab, lab_settings: Settings, actions: Actions, plain_actions: Actions
) -> None:
    # A transaction open past 10 s is a long one here: the rule must name the holder.
    t = lab_settings.thresholds.model_copy(update={"xact_s": Band(warn=10.0, crit=3600.0)})
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"locks", "sessions"}))
    quiet = Lab(lab.layout, out=io.StringIO())
    leader = lab.leader()
    assert leader is not None
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
            assert target is not None and target.application_name == HOLDER
            refused = await plain_actions.signal_backend("terminate", target)
            assert not refused.ok and "\n" not in refused.message
            assert refused.message.startswith(f"{OPERATOR_USER} may not signal pid {pid} on {leader}: ")
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
            assert done == (f"terminate backend {pid} ({SUPERUSER} {HOLDER})", leader, True)
            # The same pid again: gone, nothing sent.
            again = await actions.signal_backend("cancel", target)
            assert (again.ok, again.message) == (
                False,
                f"pid {pid} on {leader} has already gone; nothing sent",
            )
    finally:
        await poller.aclose()
