"""Recordings built from scripted snapshots, for the record/replay tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.record.limits import RecordLimit, parse_limit
from pgtop_ha.record.recorder import Recorder
from pgtop_ha.settings import Settings
from tests.ui import fixtures as fx


def failover_script(healthy: int = 5, after: int = 5, step_s: float = 1.0) -> list[ClusterSnapshot]:
    """``healthy`` cycles led by node1, then ``after`` cycles led by node2 (node1 gone)."""
    at = [fx.T0 + timedelta(seconds=i * step_s) for i in range(healthy + after)]
    return [fx.healthy(t) for t in at[:healthy]] + [fx.failed_over(t) for t in at[healthy:]]


def record_script(
    path: Path,
    snapshots: Sequence[ClusterSnapshot],
    *,
    settings: Settings | None = None,
    limit: RecordLimit | None = None,
    markers: Sequence[tuple[int, str]] = (),
) -> Recorder:
    """Record ``snapshots`` the way `pgtop-ha record` does (a Timeline), markers before cycle i."""
    recorder = Recorder.create(
        path, settings or fx.settings(), limit or parse_limit("1GiB"), role="test", clock=lambda: fx.T0
    )
    timeline = Timeline()
    stamps = dict(markers)
    for i, snap in enumerate(snapshots):
        if i in stamps:
            at: datetime = snap.taken_at - timedelta(milliseconds=500)
            timeline.mark(at, stamps[i], "test")
            recorder.marker(at, stamps[i], "test", timeline.events())
        timeline.observe(snap)
        recorder.cycle(snap, timeline.events())
    recorder.close()
    return recorder
