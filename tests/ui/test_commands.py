"""The command palette (Ctrl+P): the screen's keys by name; actions only in operator mode."""

from __future__ import annotations

from pathlib import Path

import httpx
from textual.command import CommandList, CommandPalette

from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.commands import ScreenCommands
from tests.actions.test_operator_ui import make_actions
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, screen, settled, until


async def _titles(app: PgtopApp) -> list[str]:
    provider = ScreenCommands(app.screen)
    return [str(hit.text) async for hit in provider.discover()]


async def test_palette_opens_a_pane_by_name() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
        await pilot.press(*"replication")
        await until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0, what="a hit")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, CommandPalette), what="the palette closed")
        await until(pilot, lambda: screen(app).view == "replication", what="the Replication view")
        assert screen(app).visible_panes() == ["replication"]


async def test_read_only_palette_has_views_and_no_action() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        titles = await _titles(app)
    assert "Replication (3)" in titles and "Pause (p)" in titles
    assert not [t for t in titles if t.startswith(("Switchover", "Reset stats", "Maintenance"))]


async def test_operator_palette_lists_the_actions(tmp_path: Path) -> None:
    actions, _ = make_actions(tmp_path, lambda request: httpx.Response(503))
    app = PgtopApp(sections=fx.settings().console(), source=ScriptedSource([fx.healthy()]), actions=actions)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, what="the first snapshot")
        titles = await _titles(app)
    assert {"Switchover (s)", "Reset stats (r)", "Maintenance (m)"} <= set(titles)
    assert "Replication (3)" in titles
