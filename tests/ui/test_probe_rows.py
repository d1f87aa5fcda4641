"""Probes pane rows: who answered, whether that is right for the endpoint, errors and outages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pgtop_ha.models.haproxy import Pools
from pgtop_ha.models.probe import WriteOutage
from pgtop_ha.models.snapshot import ClusterInfo, ClusterSnapshot, Member, Probe
from pgtop_ha.models.thresholds import Level, Thresholds
from pgtop_ha.ui.panes.base import Context
from pgtop_ha.ui.panes.probes import rows
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, screen, settled, texts

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
CTX = Context(thresholds=Thresholds(), pools=Pools(("writer",), ("reader",)), now=T0)


def snap(*probes: Probe) -> ClusterSnapshot:
    members = (Member(name="pg1", role="leader"), Member(name="pg2", role="replica"))
    return ClusterSnapshot(taken_at=T0, cluster=ClusterInfo(leader="pg1"), members=members, probes=probes)


def test_writer_answered_by_the_leader_is_ok_by_a_replica_is_crit() -> None:
    good = Probe(
        endpoint="writer",
        kind="writer",
        ok=True,
        answered_by="pg1",
        in_recovery=False,
        latency_ms=3.2,
        last_ok_at=T0,
        errors=0,
    )
    (row,) = rows(snap(good), CTX)
    assert row.cells["health"].level is Level.OK and row.cells["answered"].text == "pg1 (primary)"
    assert row.cells["latency"].text == "3ms"
    bad = good.model_copy(update={"answered_by": "pg2", "in_recovery": True})
    (row,) = rows(snap(bad), CTX)
    assert row.cells["health"].level is Level.CRIT


def test_errors_show_the_count_first_error_and_time_since_success() -> None:
    probe = Probe(
        endpoint="writer",
        kind="writer",
        error="127.0.0.1:25430: connection refused",
        errors=4,
        first_error="127.0.0.1:25430: server closed the connection\x1b[31m",
        last_ok_at=T0 - timedelta(seconds=7),
    )
    (row,) = rows(snap(probe), CTX)
    assert row.cells["health"].level is Level.CRIT
    assert row.cells["errors"].text == "4"
    assert row.cells["since_ok"].text == "7s"
    assert row.cells["detail"].text == "127.0.0.1:25430: server closed the connection"  # escape stripped


def test_a_failing_reader_warns_and_write_outages_get_rows() -> None:
    reader = Probe(endpoint="reader", kind="reader", error="timeout", errors=1, first_error="timeout")
    outage = WriteOutage(started_at=T0 - timedelta(seconds=9), ended_at=T0 - timedelta(seconds=4),
                         duration_s=5.0, member="pg2", failures=5)  # fmt: skip
    write = Probe(endpoint="writer", kind="write", ok=True, answered_by="pg1", in_recovery=False, errors=0,
                  last_ok_at=T0, outages=(outage,))  # fmt: skip
    out = rows(snap(reader, write), CTX)
    assert [r.cells["kind"].text for r in out] == ["reader", "write", "outage"]
    assert out[0].cells["health"].level is Level.WARN
    assert out[2].cells["answered"].text == "pg2" and out[2].cells["latency"].text == "5.0s"
    assert "11:59:51 → 11:59:56" in out[2].cells["detail"].text


def test_no_endpoints_says_how_to_add_one() -> None:
    (row,) = rows(snap(), CTX)
    assert "probes.endpoints" in row.cells["detail"].text


async def test_key_9_shows_the_probes_pane_off_the_dashboard() -> None:
    probe = Probe(endpoint="writer", kind="writer", ok=True, answered_by="node1", in_recovery=False, errors=0)
    app, source = make_app([fx.healthy().model_copy(update={"probes": (probe,)})])
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        scr = screen(app)
        assert "probes" not in scr.visible_panes()  # not on the dashboard
        await pilot.press("9")
        await pilot.pause()
        assert scr.visible_panes() == ["probes"] and scr.panes["probes"].region.height > 0
        assert texts(app, "probes")[0][:4] == ["writer", "writer", "✔ OK", "node1 (primary)"]
