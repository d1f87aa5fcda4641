"""Every pane of the console, in dashboard order: the one list a new pane is added to.

The monitor screen derives from it each pane's key binding, its place in the overview and on
the dashboard, and the pane lines of the ? help; tests/ui/test_snapshots.py gives each keyed pane
an SVG snapshot test at its own key.
"""

from __future__ import annotations

from pgtop_ha.ui.panes import (
    archiver,
    cache,
    cluster,
    events,
    failover,
    haproxy,
    horizon,
    locks,
    memory,
    overview,
    parameters,
    pgbackrest,
    pgbouncer,
    pgpool,
    probes,
    problems,
    progress,
    replication,
    serverlog,
    sessions,
    slots,
    statements,
    waits,
)
from pgtop_ha.ui.panes.base import PaneSpec

PANES: tuple[PaneSpec, ...] = (
    overview.PANE,
    cluster.PANE,
    problems.PANE,
    haproxy.PANE,
    replication.PANE,
    failover.PANE,
    slots.PANE,
    archiver.PANE,
    progress.PANE,
    memory.PANE,
    events.PANE,
    probes.PANE,
    pgbouncer.PANE,
    pgpool.PANE,
    pgbackrest.PANE,
    sessions.PANE,
    statements.PANE,
    serverlog.PANE,
    locks.PANE,
    waits.PANE,
    horizon.PANE,
    parameters.PANE,
    cache.PANE,
)
