"""Locks and waits read from a real lab: a lock held with waiters, a slow reader on ClientWrite."""

from __future__ import annotations

import io

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.problems import cluster_problems
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.models.locks import STOPS_EVERYTHING, blocking_trees
from pgtop_ha.models.snapshot import ClusterSnapshot, NodeSnapshot
from pgtop_ha.models.thresholds import Band
from pgtop_ha.models.waits import kind
from pgtop_ha.settings import Settings
from tests.support.lab_polls import end_sessions, running, until_seen

pytestmark = pytest.mark.lab


def _leader_node(lab: Lab, snap: ClusterSnapshot) -> NodeSnapshot | None:
    leader = lab.leader()
    return snap.node(leader) if leader else None


async def test_locks_show_the_root_blocker_and_the_access_exclusive_waiter(
    lab: Lab, lab_settings: Settings
) -> None:
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset({"locks"}))
    quiet = Lab(lab.layout, out=io.StringIO())
    try:
        # A long hold, ended once seen: a loaded machine may take many cycles to show the queue.
        with running(lambda: faults.lock(quiet, seconds=60, waiters=2), 90):

            def with_tree(snap: ClusterSnapshot) -> NodeSnapshot | None:
                # Any node: the fault locks on whichever node led when it started.
                for node in snap.nodes:
                    lines = blocking_trees(node.locks or ())
                    roots = [x for x in lines if x.depth == 0 and x.waiters >= 2]
                    if roots and sum(1 for x in lines if x.depth > 0) >= 2:
                        return node
                return None

            snap = await until_seen(
                poller, lambda s: with_tree(s) is not None, 60, "the lock's blocking tree"
            )
            node = with_tree(snap)
            assert node is not None
            lines = blocking_trees(node.locks or ())
            root = next(x for x in lines if x.depth == 0)
            assert root.process.application_name == faults.LOCK_HOLDER_APP
            assert root.process.waiting_mode is None  # the root waits on nobody
            waiters = [x.process for x in lines if x.depth > 0]
            assert all(w.relation and faults.LOCK_TABLE.split(".")[-1] in w.relation for w in waiters)
            assert {c.mode for c in node.lock_counts or () if c.waiting} and any(
                c.mode == STOPS_EVERYTHING and (c.granted or 0) >= 1 for c in node.lock_counts or ()
            )
            # The waits sample counts the queued sessions as Lock waits on the same node.
            assert any(w.wait_class == "Lock" and (w.count or 0) >= 2 for w in node.waits)
            end_sessions(lab, faults.LOCK_HOLDER_APP)  # the waiters then finish
    finally:
        await poller.aclose()


async def test_locks_are_not_read_while_nobody_looks(lab: Lab, lab_settings: Settings) -> None:
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset())
    try:
        snap = await until_seen(poller, lambda s: all(n.reachable for n in s.nodes), 30, "every node")
        assert all(n.locks is None and n.lock_counts is None and "locks" in n.unavailable for n in snap.nodes)
    finally:
        await poller.aclose()


async def test_sessions_queued_behind_a_lock_are_read_while_nobody_looks_at_locks(
    lab: Lab, lab_settings: Settings
) -> None:
    # The overview at 80x24 said nothing through `lab fault lock`: the Locks pane was off screen.
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset())
    quiet = Lab(lab.layout, out=io.StringIO())
    # A short threshold, so the queue is graded within seconds; the fault ends once it is.
    thresholds = lab_settings.thresholds.model_copy(update={"lock_wait_s": Band(warn=2.0, crit=60.0)})
    try:
        with running(lambda: faults.lock(quiet, seconds=60, waiters=2), 90):

            def queued(snap: ClusterSnapshot) -> bool:
                problems = cluster_problems(snap, thresholds, lab_settings.haproxy.pools(), snap.taken_at)
                return any(p.key == "lock waits" and p.subject == lab.leader() for p in problems)

            snap = await until_seen(poller, queued, 60, "the queued sessions' problem line")
            node = _leader_node(lab, snap)
            assert node is not None and node.locks is None  # not read: the Locks pane's read stayed off
            waits = sorted(p.lock_query_s for p in node.processes if p.lock_query_s is not None)
            assert len(waits) == 2 and waits[-1] >= thresholds.lock_wait_s.warn
            # Only the queued sessions carry it: the holder and every other process read NULL.
            holder = [p for p in node.processes if p.application_name == faults.LOCK_HOLDER_APP]
            assert holder and all(p.lock_query_s is None for p in holder)
            end_sessions(lab, faults.LOCK_HOLDER_APP)
    finally:
        await poller.aclose()


async def test_a_slow_reader_is_a_client_write_wait(lab: Lab, lab_settings: Settings) -> None:
    poller = Poller.from_settings(lab_settings)
    poller.set_needs(frozenset())
    quiet = Lab(lab.layout, out=io.StringIO())
    try:
        with running(lambda: faults.slow_reader(quiet, seconds=15), 90):

            def client_write(snap: ClusterSnapshot) -> bool:
                node = _leader_node(lab, snap)
                return node is not None and any(w.event == "ClientWrite" for w in node.waits)

            snap = await until_seen(poller, client_write, 40, "a ClientWrite wait")
            node = _leader_node(lab, snap)
            assert node is not None
            client = [w for w in node.waits if w.event == "ClientWrite"]
            assert (
                client
                and (client[0].count or 0) >= 1
                and kind(client[0].wait_class, "ClientWrite") == "client"
            )
    finally:
        await poller.aclose()
