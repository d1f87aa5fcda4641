"""The console against the real lab with a node SIGSTOPped: keys still work, other nodes still update."""

from __future__ import annotations

import asyncio
import io
from datetime import datetime

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import Settings
from pgtop_ha.ui.app import PgtopApp
from tests.ui.harness import screen, table, until

pytestmark = pytest.mark.lab


def fresh_since(snap: ClusterSnapshot | None, names: list[str], since: datetime | None) -> bool:
    """Every node in ``names`` answered (PostgreSQL and Patroni) in ``snap``, after ``since`` if given."""
    if snap is None:
        return False
    nodes = {n.name: n for n in snap.nodes}
    members = {m.name: m for m in snap.members}
    for name in names:
        node, member = nodes.get(name), members.get(name)
        if node is None or member is None or node.error is not None:
            return False
        for last_ok in (node.last_ok_at, member.last_ok_at):
            if last_ok is None or (since is not None and last_ok <= since):
                return False
    return True


def frozen_seen(snap: ClusterSnapshot | None, name: str) -> bool:
    """The snapshot reports ``name``'s PostgreSQL as not answering."""
    if snap is None:
        return False
    node = next((n for n in snap.nodes if n.name == name), None)
    return node is not None and node.error is not None


async def test_frozen_node_keys_and_other_nodes_still_update(lab: Lab, lab_settings: Settings) -> None:
    leader = await asyncio.to_thread(lab.leader)
    assert leader is not None
    # A replica: freezing the leader would start a failover, which is another test's subject.
    frozen = next(n for n in NODE_NAMES if n != leader)
    others = [n for n in NODE_NAMES if n != frozen]
    app = PgtopApp(lab_settings.console(), Poller.from_settings(lab_settings))
    async with app.run_test(size=(80, 24)) as pilot:
        everyone = list(NODE_NAMES)
        await until(pilot, lambda: fresh_since(app.snapshot, everyone, None), 30, "every node answering")
        quiet = Lab(lab.layout, out=io.StringIO())
        await asyncio.to_thread(faults.freeze, quiet, frozen)
        try:
            await until(pilot, lambda: frozen_seen(app.snapshot, frozen), 30, f"{frozen} shown not answering")
            seen = app.snapshot
            assert seen is not None
            # Keys are handled while the frozen node's poll hangs in the background.
            await pilot.press("3")
            assert screen(app).view == "replication"
            assert table(app, "replication").display
            await pilot.press("1")
            assert screen(app).view == "cluster"
            await pilot.press("0")
            assert screen(app).view == "overview"
            # A later snapshot brings fresh data for the unfrozen nodes, the frozen one still failing.
            await until(
                pilot,
                lambda: (
                    app.snapshot is not seen
                    and frozen_seen(app.snapshot, frozen)
                    and fresh_since(app.snapshot, others, seen.taken_at)
                ),
                30,
                "fresh data for the other nodes",
            )
        finally:
            await asyncio.to_thread(faults.thaw, quiet, frozen)
