"""SVG snapshots of every pane at 80x24 and 160x48 in the dark and mono themes (fixed clock/data)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from textual.pilot import Pilot

from pgtop_ha.models.probe import WriteOutage
from pgtop_ha.models.snapshot import ClusterSnapshot, Probe
from pgtop_ha.ui.panes import registry
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, settled, view_shown


def _kill() -> list[ClusterSnapshot]:
    return [fx.healthy(), fx.kill_primary()]


def _busy() -> list[ClusterSnapshot]:
    later = fx.T0 + timedelta(seconds=20)
    return [fx.healthy(), fx.subscriber_copy(fx.lagging(fx.healthy(later)))]


def _probed() -> list[ClusterSnapshot]:
    """The failover seen through the endpoints: writes failing, reads still served, one outage."""
    at = fx.T0 + timedelta(seconds=20)
    probes = (
        Probe(
            endpoint="haproxy-writer",
            kind="writer",
            error="connection refused",
            errors=4,
            first_error="server closed the connection unexpectedly",
            last_ok_at=at - timedelta(seconds=8),
        ),
        Probe(
            endpoint="haproxy-reader",
            kind="reader",
            ok=True,
            answered_by="node2",
            in_recovery=True,
            latency_ms=2.4,
            errors=0,
            last_ok_at=at,
        ),
        Probe(
            endpoint="write",
            kind="write",
            ok=True,
            answered_by="node2",
            in_recovery=False,
            latency_ms=5.1,
            errors=0,
            last_ok_at=at,
            outages=(
                WriteOutage(
                    started_at=fx.T0,
                    ended_at=fx.T0 + timedelta(seconds=9),
                    duration_s=9.0,
                    member="node2",
                    failures=9,
                ),
            ),
        ),
    )
    return [fx.healthy(), fx.kill_primary().model_copy(update={"probes": probes})]


def _healthy() -> list[ClusterSnapshot]:
    return [fx.healthy(), fx.healthy(fx.T0 + timedelta(seconds=20))]


def _locked() -> list[ClusterSnapshot]:
    """An ALTER TABLE behind an idle-in-transaction session, readers queued behind it."""
    return [fx.healthy(), fx.locked(fx.healthy(fx.T0 + timedelta(seconds=10))), fx.locked()]


def _frozen() -> list[ClusterSnapshot]:
    return [fx.healthy(), fx.frozen()]


def _pooled() -> list[ClusterSnapshot]:
    """After a failover to node2, a pgBouncer and a pgpool-II still on node1 (the contradictions)."""
    return [
        fx.pooled(fx.healthy(fx.T0 + timedelta(seconds=30))),
        fx.pooled(fx.failed_over(), following=False),
    ]


# Which scripted data shows a pane best; a pane not named here gets the failover (_kill).
SCENARIOS: dict[str, Callable[[], list[ClusterSnapshot]]] = {
    "replication": _busy,
    "slots": _busy,
    "progress": _busy,
    "archiver": _busy,
    "memory": _busy,
    "probes": _probed,
    "locks": _locked,
    "sessions": lambda: [fx.healthy(), fx.sessioned()],
    "statements": lambda: [fx.healthy(), fx.stated()],
    "log": lambda: [fx.healthy(), fx.logged()],
    "waits": _locked,
    "horizon": _healthy,
    "parameters": lambda: [fx.healthy(), fx.tuned()],
    "pgbouncer": _pooled,
    "pgpool": _pooled,
    "cache": lambda: [fx.cached(fx.healthy()), fx.cached(fx.failed_over())],
}

# The overview at key 0, then every pane of the registry that has a key of its own: a pane added
# to the registry gets its snapshot here (create it once with --snapshot-update, then review it).
VIEWS: dict[str, tuple[str, Callable[[], list[ClusterSnapshot]]]] = {
    "overview": ("0", _kill),
    # The 80x24 overview beside a failure test: calm, the leader's postmaster killed, a node frozen.
    "overview-healthy": ("0", _healthy),
    "overview-frozen": ("0", _frozen),
    # The same beside a cluster's own long member names ("pg-prod-eu-central-1a-01").
    "overview-long-names": ("0", lambda: [fx.renamed(s) for s in _frozen()]),
    **{p.id: (p.key, SCENARIOS.get(p.id, _kill)) for p in registry.PANES if p.key},
}


@pytest.mark.parametrize("theme", ["dark", "mono"])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_pane_snapshot(snap_compare: Any, view: str, size: tuple[int, int], theme: str) -> None:
    key, scenario = VIEWS[view]
    app, source = make_app(scenario(), settings=fx.settings(theme=theme))

    async def ready(pilot: Pilot[None]) -> None:
        await settled(pilot, app, source)
        await pilot.press(key)
        await view_shown(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=ready)
