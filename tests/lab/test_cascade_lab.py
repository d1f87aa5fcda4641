"""A cascading lab (`lab up --cascade`): the last member streams from the second, drawn as a tree."""

from __future__ import annotations

import asyncio
import dataclasses
import io

from pgtop_ha.collect.snapshot_cli import take_snapshot
from pgtop_ha.lab.cluster import Lab, claim_layout
from pgtop_ha.lab.procs import poll
from pgtop_ha.models.servers import upstream_of
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import load_settings
from pgtop_ha.ui.panes import cluster
from pgtop_ha.ui.panes.base import Context


def test_a_cascade_is_drawn_from_the_wal_receivers() -> None:
    lab = Lab(dataclasses.replace(claim_layout(None), cascade=True), out=io.StringIO())
    try:
        lab.up(rows=1_000)
        settings = load_settings(lab.layout.console_config)
        first, second, last = lab.layout.names
        snaps: list[ClusterSnapshot] = []

        def cascaded() -> bool:
            snaps.append(asyncio.run(take_snapshot(settings)))
            return upstream_of(snaps[-1], last) == second and not snaps[-1].verdicts

        assert poll(cascaded, 90, interval=0.5), (upstream_of(snaps[-1], last), snaps[-1].verdicts)
        snap = snaps[-1]
        leader = snap.cluster.leader
        assert leader in (first, second)  # the cascade's tag names the second member, not a leader
        ctx = Context(thresholds=settings.thresholds, pools=settings.haproxy.pools(), now=snap.taken_at)
        shown = {r.key: r.cells["upstream"].text for r in cluster.rows(snap, ctx)}
        assert shown[last] == (f"└ {second}" if second != leader else second)
        assert shown[leader] == "-"
    finally:
        lab.down()
