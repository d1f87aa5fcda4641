"""The 80x24 screen with a cluster's own long member names, and a failover's figures on two lines."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from textual.app import App, ComposeResult

from pgtop_ha.engines.stopwatch import FailoverReport
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.format import fit_name
from pgtop_ha.ui.panes import overview
from pgtop_ha.ui.panes.base import NAME_WIDTH, Cell, Column, Row, name_column
from pgtop_ha.ui.widgets.banner import Banner, banner_text
from pgtop_ha.ui.widgets.heartbeat import Heartbeat
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, settled, until, view_shown
from tests.ui.test_rows import ctx

LABELS = ("…1a-01", "…1b-02", "…1c-03")

SCENARIOS: dict[str, Callable[[], list[ClusterSnapshot]]] = {
    "healthy": lambda: [fx.healthy(), fx.healthy(fx.T0 + timedelta(seconds=20))],
    "kill-primary": lambda: [fx.healthy(), fx.kill_primary()],
    "frozen": lambda: [fx.healthy(), fx.frozen()],
    "failed-over": lambda: [fx.healthy(), fx.kill_primary(), fx.failed_over()],
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_the_overview_fits_80_columns_with_long_member_names(scenario: str) -> None:
    app, source = make_app([fx.renamed(s) for s in SCENARIOS[scenario]()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("0")
        await view_shown(pilot, app)
        tables = list(app.screen.query(KeyedTable).results())
        assert tables
        for table in tables:
            # Before, the Member column took 26 columns and pushed Route out (sideways scroll).
            assert table.max_scroll_x == 0, (table.id, table.virtual_size.width, table.size.width)
        members = [row[0] for row in app.screen.query_one("#t-overview-members", KeyedTable).visible_texts()]
        assert [m.split(" ", 1)[1] for m in members] == list(LABELS)
        header = app.screen.query_one(Heartbeat).render().plain
        for label in LABELS:
            assert label in header, header  # each node's freshness, none cut off the line
        banner = app.screen.query_one(Banner).render().plain
        if scenario == "failed-over":
            # The compact stopwatch: who, and the figures, inside the line.
            assert banner.strip().startswith("⏱ …1a-01 → …1b-02 · elected"), banner
            assert len(banner.rstrip()) <= 80


def test_a_name_keeps_what_tells_it_apart() -> None:
    regional = list(fx.LONG_NAMES)
    assert [fit_name(n, regional, 11) for n in regional] == list(LABELS)
    assert fit_name(regional[0], regional, 14) == "…central-1a-01"
    pods = ["acid-minimal-cluster-0", "acid-minimal-cluster-1"]
    assert [fit_name(n, pods, 11) for n in pods] == ["…cluster-0", "…cluster-1"]
    hosts = ["db1.prod.example.com", "db2.prod.example.com"]
    assert [fit_name(n, hosts, 11) for n in hosts] == ["db1.prod…", "db2.prod…"]
    # Names that fit are never touched; a name that differs at its start keeps its start, cut at a break.
    assert fit_name("node1", ["node2"], 11) == "node1"
    # A member known only by its configured REST address: the port tells it apart, not the host.
    assert fit_name("127.0.0.1:27622", ["node1", "node2"], 11) == "…0.1:27622"
    assert fit_name("db3.prod.example.com", ["node1"], 11) == "db3.prod…"
    assert fit_name("alpha-db-server-primary", ["beta-db-server-standby"], 11) == "alpha-db…"
    # A tail another name ends with too: each part that differs is kept.
    regions = ["pg-prod-eu-central-1a-01", "pg-prod-eu-central-1b-02", "pg-prod-us-central-1a-01"]
    assert fit_name(regions[0], regions, 11) == "…eu…1a-01"
    assert len({fit_name(n, regions, 11) for n in regions}) == 3
    # No break to cut at: the end that holds the difference.
    assert [fit_name(n, ["node1", "node2"], 3) for n in ("node1", "node2")] == ["…e1", "…e2"]


def test_a_hostile_name_is_cleaned_and_bounded() -> None:
    evil = "\x1b[2J" + "x" * 10_000
    fitted = fit_name(evil, [evil, "y"], 11)
    assert len(fitted) <= 11 and "\x1b" not in fitted


async def test_the_banner_takes_a_second_line_for_a_failovers_figures() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        banner = app.screen.query_one(Banner)
        assert not banner.display
        report = FailoverReport(
            old_leader="node1",
            new_leader="node2",
            lost_at=fx.T0,
            ended_at=fx.T0 + timedelta(seconds=12),
            done=True,
            election_s=1.2,
            down_to_elected_s=3.4,
            write_outage_s=5.0,
            client_write_outage_s=6.0,
            lag_at_promotion_bytes=512,
            replicas_streaming_s=11.0,
            permanent_slots_ok=True,
        )
        text = banner_text([], report, fx.T0 + timedelta(seconds=15), {}, names=fx.NAMES, width=80)
        banner.show(text)
        await until(pilot, lambda: banner.size.height == 2, what="a banner of two lines")
        lines = [strip.text for strip in (banner.render_line(0), banner.render_line(1))]
        assert "writes down 5.0s · clients down 6.0 s" in lines[0], lines
        assert "replicas 11.0s · slots ok" in lines[1], lines
        banner.show(banner_text([], None, fx.T0, {}, width=80))
        await until(pilot, lambda: not banner.display, what="the banner hidden again")
        assert banner.styles.height is not None and banner.styles.height.value == 1


def test_the_worst_slot_keeps_its_figures_beside_long_names() -> None:
    # A Debezium slot on a host-named member: the line's 62 columns cut "48 MiB retained".
    snap = fx.renamed(fx.subscriber_copy(fx.healthy()))
    debezium = "debezium_payments_orders_production_slot"
    snap = ClusterSnapshot.model_validate_json(snap.model_dump_json().replace("lab_sub", debezium))
    lines = {r.cells["what"].text: r.cells["now"].text for r in overview.state_rows(snap, ctx())}
    assert lines["Worst slot"].endswith(" on …1a-01: 48 MiB retained, reserved"), lines
    assert lines["Worst slot"].startswith("debezium_payments_orde")
    assert all(len(text) <= overview.STATE_ROOM for text in lines.values()), lines
    # Room enough: the names are not cut.
    plain = {
        r.cells["what"].text: r.cells["now"].text
        for r in overview.state_rows(fx.renamed(fx.healthy()), ctx())
    }
    assert plain["Worst slot"] == "lab_sub on pg-prod-eu-central-1a-01: 48 MiB retained, reserved"


async def test_the_dashboards_name_columns_tell_long_names_apart_in_14_columns() -> None:
    app, source = make_app([fx.renamed(fx.healthy()), fx.renamed(fx.frozen())])
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        replication = app.screen.query_one("#t-replication", KeyedTable)
        pairs = [(row[0], row[1]) for row in replication.visible_texts()]
        # From and Standby took 26 columns each of a pane 78 wide.
        assert pairs == [("…central-1a-01", "…central-1b-02"), ("…central-1a-01", "…central-1c-03")]
        for label, width in zip(replication.labels(), replication.column_widths(), strict=True):
            if label in ("From", "Standby"):
                assert width <= NAME_WIDTH + 2
        # Sorted and filtered by the full name still: the cell keeps it, only its text is cut.
        cluster = app.screen.query_one("#t-cluster", KeyedTable)
        # Capped as in every pane: one long name never pushes the other columns out of view.
        assert [row[0] for row in cluster.visible_texts()] == [
            "…central-1a-01",
            "…central-1b-02",
            "…central-1c-03",
        ]


class OneTable(App[None]):
    def __init__(self, table: KeyedTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


async def test_new_member_names_redraw_a_name_column() -> None:
    table = KeyedTable((name_column("node", "Node"), Column("x", "X")), id="t")
    app = OneTable(table)
    async with app.run_test(size=(80, 10)) as pilot:
        rows = [Row(key=n, cells={"node": Cell(n), "x": Cell("1")}, node=n) for n in fx.LONG_NAMES[:2]]
        table.use_names(fx.LONG_NAMES[:2])
        table.apply(rows)
        await pilot.pause()
        assert [r[0] for r in table.visible_texts()] == ["…central-1a-01", "…central-1b-02"]
        # A member in another region joins: "…central-1a-01" could now be either one.
        table.use_names(("pg-prod-eu-central-1a-01", "pg-prod-eu-central-1b-02", "pg-prod-us-central-1a-01"))
        table.apply(rows)  # the very same rows: only the names moved
        await pilot.pause()
        assert [r[0] for r in table.visible_texts()] == ["…eu…1a-01", "…central-1b-02"]


@pytest.mark.parametrize("scenario", ["kill-primary", "frozen", "failed-over"])
async def test_seven_members_at_80x24_keep_the_stale_node_and_the_cadence_in_the_header(
    scenario: str,
) -> None:
    # Two data centres and a witness: the header cut off its last nodes and the fast cadence.
    app, source = make_app([fx.grown(s, 7, like="node2") for s in SCENARIOS[scenario]()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        header = app.screen.query_one(Heartbeat).render().plain
        # A frozen replica is slow (its reads still running); a killed primary's read failed: CRIT.
        stale = "node3 ▲" if scenario == "frozen" else "node1 ✖"
        assert stale in header and "+6 ✔" in header and header.rstrip().endswith("(fast)"), header
        assert len(header.rstrip()) <= 80
        members = app.screen.query_one("#t-overview-members", KeyedTable)
        assert [row[0].split(" ", 1)[1] for row in members.visible_texts()] == [
            f"node{i}" for i in range(1, 8)
        ]
        assert members.max_scroll_x == 0
