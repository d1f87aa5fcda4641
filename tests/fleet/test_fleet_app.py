"""The fleet screen through Textual's Pilot, with a scripted source."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from pgtop_ha.collect.prometheus import PrometheusError
from pgtop_ha.judge.fleet import CRIT, WARN, FleetCounts, FleetPage, FleetRow, level_of, matches
from pgtop_ha.ui.fleet.app import FleetApp
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.fleet.synth import FakeFleet

NOW = 1_700_000_000.0


class Scripted:
    """A FleetSource answering from a list (an Exception item is raised); it filters as Prometheus would."""

    def __init__(self, answers: list[list[FleetRow] | Exception], total: int | None = None) -> None:
        self.answers = answers
        self.calls = 0
        self.asked: list[str] = []
        self.total = total

    async def refresh(self, filter_text: str = "") -> FleetPage:
        item = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        self.asked.append(filter_text)
        if isinstance(item, Exception):
            raise item
        rows = [r for r in item if matches(r, filter_text)]
        levels = [level_of(r.severity) for r in rows]
        total = len(rows) if self.total is None or filter_text else self.total
        counts = FleetCounts(total=total, crit=levels.count(CRIT), warn=levels.count(WARN))
        return FleetPage(rows, counts)

    async def interval(self) -> float:
        return 0.05

    async def aclose(self) -> None:
        return None


def _rows(n: int) -> list[FleetRow]:
    return sorted(FakeFleet(n, now=NOW).rows, key=lambda r: r.scope)


def _status(app: FleetApp) -> str:
    content = app.query_one("#status", Static).content
    return content.plain if isinstance(content, Text) else str(content)


async def _until(pilot, condition, limit: int = 200) -> None:  # type: ignore[no-untyped-def]
    for _ in range(limit):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not met in time")


async def test_rows_filter_and_drill() -> None:
    app = FleetApp(Scripted([_rows(4)]))
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(KeyedTable)
        await _until(pilot, lambda: table.row_count == 4)
        assert _status(app) == "4 clusters: 4 ok · 0 warn · 0 crit; live PromQL"
        await pilot.press("slash", *"0003", "enter")
        await _until(pilot, lambda: table.row_count == 1)
        # Asked of Prometheus too: the whole fleet is narrowed, not only the rows at hand.
        await _until(pilot, lambda: app.answered_for == "0003")
        assert _status(app) == "1 cluster: 1 ok · 0 warn · 0 crit (filter: 0003); live PromQL"
        await pilot.press("escape")
        await _until(pilot, lambda: table.row_count == 4)
        table.focus()
        await pilot.press("down", "enter")
    assert app.return_value == "cluster-00001"


async def test_prometheus_error_is_one_line_and_keeps_rows() -> None:
    hostile = PrometheusError("prometheus http://x: HTTP 503 [bold]boom[/bold]")
    app = FleetApp(Scripted([_rows(2), hostile]))
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(KeyedTable)
        await _until(pilot, lambda: app.error is not None)
        status = _status(app)
        assert status.startswith("Prometheus: ") and "[bold]boom[/bold]" in status  # shown, not parsed
        assert table.row_count == 2


async def test_first_refresh_fails() -> None:
    app = FleetApp(Scripted([RuntimeError("connection refused\nsecond line")]))
    async with app.run_test(size=(120, 30)) as pilot:
        await _until(pilot, lambda: app.refreshes >= 1)
        assert _status(app) == "Prometheus: connection refused (no answer yet)"
        await pilot.press("q")
    assert app.return_value is None


async def test_the_header_counts_the_whole_fleet_beyond_the_rows() -> None:
    rows = FakeFleet(300, now=NOW).rows
    app = FleetApp(Scripted([rows[:20]], total=10_000))
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(KeyedTable)
        await _until(pilot, lambda: table.row_count == 20)
        status = _status(app)
        assert status.startswith("10,000 clusters: ") and "the 20 worst shown" in status
        first = str(table.get_row_at(0)[0])
        assert first == rows[0].scope and rows[0].problems  # problems first


async def test_many_clusters_stay_responsive() -> None:
    app = FleetApp(Scripted([_rows(1000)]))
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(KeyedTable)
        await _until(pilot, lambda: table.row_count == 1000, limit=500)
        await pilot.press("slash", *"0999", "enter")
        await _until(pilot, lambda: table.row_count == 1)
        # The one row left is the cluster the filter named, not whichever row came first.
        assert any("0999" in str(cell) for cell in table.get_row_at(0))
