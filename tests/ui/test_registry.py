"""The pane registry: one list gives a pane its key, its place, its help line and its rows' shape."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from textual.binding import Binding

from pgtop_ha.engines.events import diff
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.operator.screen import OperatorScreen
from pgtop_ha.ui.panes import registry
from pgtop_ha.ui.panes.base import Cell, Column, ColumnMismatch, Context, PaneSpec, Row, cell, num, ordered
from pgtop_ha.ui.screens.help import HelpScreen, help_text
from pgtop_ha.ui.screens.monitor import GridPlan, MonitorScreen, grid_plan, pane_bindings, screen_bindings
from pgtop_ha.ui.screens.replay import ReplayScreen
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, screen, settled, texts, until
from tests.ui.test_rows import ctx

PANES_DIR = Path(registry.__file__).parent


def _test_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    return [
        Row(key=n.name, node=n.name, cells={"what": cell(f"hello {n.name}"), "n": num("1", 1)})
        for n in snapshot.nodes
    ]


TEST_PANE = PaneSpec(
    id="testpane",
    title="Testpane",
    key="z",
    columns=(Column("what", "What"), Column("n", "N", right=True)),
    rows=_test_rows,
    help="a pane registered by a test",
)


def test_the_registry_lays_out_the_console_as_the_stylesheet_did() -> None:
    panes = registry.PANES
    # Below 160x48 the overview is one pane built for 80x24; above, the dashboard as before.
    assert grid_plan(panes, "overview", wide=False) == GridPlan(1, "1fr", ("overview",))
    wide = grid_plan(panes, "overview", wide=True)
    assert wide.columns == 2 and wide.rows == "auto 1fr 1fr 1fr 1fr"
    key_only = {p.id for p in panes if not p.place.dashboard}
    assert {"overview", "probes", "pgbackrest"} <= key_only
    assert wide.shown == tuple(p.id for p in panes if p.id not in key_only)
    assert wide.spans == (("cluster", 2),)
    assert grid_plan(panes, "slots", wide=True) == GridPlan(1, "1fr", ("slots",))


def test_pane_ids_keys_and_help_lines_are_unique_and_fit() -> None:
    ids = [t.id for p in registry.PANES for t in p.tables]
    assert len(ids) == len(set(ids))
    keys = [p.key for p in registry.PANES if p.key]
    assert len(keys) == len(set(keys)) and "0" not in keys
    screen_keys = {
        b.key
        for cls in (PgtopApp, MonitorScreen, OperatorScreen, ReplayScreen)
        for b in cls.BINDINGS
        if isinstance(b, Binding)
    }
    assert not screen_keys & set(keys)
    lines = help_text(registry.PANES).splitlines()
    for pane in registry.PANES:
        if pane.key:
            line = next(x for x in lines if pane.title in x and pane.help in x)
            assert len(line) <= 80, line  # the help box is 80 columns inside


@pytest.mark.parametrize("pane", registry.PANES, ids=lambda p: p.id)
def test_every_pane_fills_exactly_its_columns(pane: PaneSpec) -> None:
    later = fx.T0 + timedelta(seconds=20)
    scenes = [
        (fx.kill_primary(), [fx.healthy()]),
        (fx.subscriber_copy(fx.lagging(fx.healthy(later))), [fx.healthy()]),
        (fx.locked(), [fx.healthy(), fx.locked(fx.healthy(later - timedelta(seconds=10)))]),
        (fx.tuned(), [fx.healthy()]),
        (fx.cached(fx.failed_over()), [fx.cached(fx.healthy())]),
        (fx.sessioned(), [fx.healthy()]),
        (fx.stated(), [fx.healthy()]),
        (fx.logged(), [fx.healthy()]),
    ]
    filled = 0
    for snap, history in scenes:
        for table in pane.tables:
            columns = table.dynamic_columns(snap) if table.dynamic_columns else table.columns
            for row in table.rows(snap, ctx(history=history, events=diff(history[-1], snap))):
                assert len(ordered(row, columns)) == len(columns)
                filled += 1
    assert filled > 0


def test_a_row_with_a_missing_or_extra_column_fails_loudly() -> None:
    columns = (Column("a", "A"), Column("b", "B"))
    assert [c.text for c in ordered(Row("k", {"b": Cell("2"), "a": Cell("1")}), columns)] == ["1", "2"]
    with pytest.raises(ColumnMismatch, match=r"no cell for columns \['b'\]"):
        ordered(Row("k", {"a": Cell("1")}), columns)
    with pytest.raises(ColumnMismatch, match=r"unknown columns \['c'\]"):
        ordered(Row("k", {"a": Cell("1"), "b": Cell("2"), "c": Cell("3")}), columns)
    with pytest.raises(
        ColumnMismatch, match=r"no cell for columns \['b'\], cells for unknown columns \['c'\]"
    ):
        ordered(Row("k", {"a": Cell("1"), "c": Cell("3")}), columns)


def test_a_pane_key_taken_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'1' is cluster's already"):
        pane_bindings(
            (*registry.PANES, PaneSpec(id="x", title="X", key="1", columns=(), rows=_test_rows, help=""))
        )
    with pytest.raises(ValueError, match=r"\['p'\] are also screen keys"):
        screen_bindings((PaneSpec(id="x", title="X", key="p", columns=(), rows=_test_rows, help=""),))


def test_panes_take_their_rates_from_models_derive() -> None:
    # One rule for rates and presence (models/derive.py): no pane times deltas itself.
    for path in PANES_DIR.glob("*.py"):
        source = path.read_text()
        assert "taken_at" not in source, f"{path.name} times a rate itself; use models.derive"


async def test_adding_a_pane_to_the_registry_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "PANES", (*registry.PANES, TEST_PANE))
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        scr = screen(app)
        assert any(b.action == "view('testpane')" for _, b, _, _ in scr.active_bindings.values())  # its key
        await pilot.press("z")
        await until(pilot, lambda: scr.visible_panes() == ["testpane"], what="the test pane's view")
        await until(pilot, lambda: bool(texts(app, "testpane")), what="its rows")
        assert texts(app, "testpane")[0] == ["hello node1", "1"]
        assert str(scr.panes["testpane"].border_title) == "z Testpane"
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        shown = str(app.screen.query_one("#help-text").render())
        assert "Testpane" in shown and "a pane registered by a test" in shown  # its help line
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help closed")
        await pilot.press("0")
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: scr.dashboard, what="the dashboard")
        await pilot.pause()
        assert scr.panes["testpane"].region.height > 0  # its place on the dashboard
        assert grid_plan(registry.PANES, "overview", wide=True).rows == "auto 1fr 1fr 1fr 1fr 1fr"
