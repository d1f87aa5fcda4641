"""A crash is dated when the kept connection drops, not when the next poll finds the node down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.lab import faults
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.settings import Settings

pytestmark = pytest.mark.lab


@pytest.fixture
async def poller(lab_settings: Settings) -> AsyncIterator[Poller]:
    p = Poller.from_settings(lab_settings)
    try:
        yield p
    finally:
        await p.aclose()


async def test_a_killed_postmaster_is_failing_from_its_connections_loss(lab: Lab, poller: Poller) -> None:
    snap = await poller.cycle()
    leader = snap.cluster.leader
    assert leader is not None and (n := snap.node(leader)) is not None and n.reachable
    killed_at = datetime.now(UTC)
    faults.kill_primary(lab)
    # Not a synchronisation: the scenario itself. The console's next poll comes a second later (its
    # 1 s interval), and what is tested is that the loss is dated before it.
    await asyncio.sleep(1.0)
    down = (await poller.cycle()).node(leader)
    assert down is not None and not down.reachable and down.failing_since is not None, down
    lag = (down.failing_since - killed_at).total_seconds()
    assert -0.05 <= lag < 0.3, lag  # not the poll's 1 s later
