"""Replay under Pilot: the recorded leader change is shown, keys move through recorded time, nothing acts.

Also the live console's recording hook and key M.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot

from pgtop_ha.record.limits import parse_limit
from pgtop_ha.record.markers import MarkerInbox, send_marker
from pgtop_ha.record.reader import Recording
from pgtop_ha.record.recorder import Recorder
from pgtop_ha.record.replay import ReplaySource
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.replay import ReplayApp
from pgtop_ha.ui.screens.help import HelpScreen
from pgtop_ha.ui.screens.marker import MarkerScreen
from pgtop_ha.ui.screens.replay import ReplayScreen
from pgtop_ha.ui.widgets.heartbeat import Heartbeat
from tests.record.helpers import failover_script, record_script
from tests.support.clocks import fixed_clock
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures as fx
from tests.ui.harness import NOW, row_of, settled, texts, until


def _header(app: PgtopApp) -> str:
    return app.screen.query_one(Heartbeat).render().plain


def _replay(path: Path, playing: bool = False) -> tuple[ReplayApp, ReplaySource]:
    source = ReplaySource(Recording.open(path), playing=playing)
    return ReplayApp(fx.settings().console(), source, path), source


async def _shown(pilot: Pilot[None], source: ReplaySource, index: int) -> None:
    app = pilot.app
    assert isinstance(app, ReplayApp)
    await until(pilot, lambda: source.current is not None and source.index == index, what=f"frame {index}")
    await until(pilot, lambda: app.snapshot is source.current, what="frame on screen")
    await pilot.pause()


async def test_replay_reproduces_the_leader_change(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    script = failover_script(healthy=3, after=3)
    record_script(path, script, markers=[(3, "killed primary")])
    app, source = _replay(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _shown(pilot, source, 0)
        assert isinstance(app.screen, ReplayScreen)
        assert row_of(app, "cluster", "node1")[2] == "leader"
        head = _header(app)
        assert "READ-ONLY·replay" in head
        assert head.startswith(" ⏸ replay 2025-01-02 03:04:05 ×1 1/6 ")
        # Step to the first snapshot after the failover: the new leader is on screen.
        for i in (1, 2, 3):
            await pilot.press("full_stop")
            await _shown(pilot, source, i)
        assert row_of(app, "cluster", "node2")[2:4] == ["leader", "primary"]
        assert app.clock() == script[3].taken_at
        assert "03:04:08" in _header(app) and "4/6" in _header(app)
        # The Events pane shows the recorded events up to the shown time, marker included.
        events = [r[4] for r in texts(app, "events")]
        assert "leader node1 → node2" in events and "killed primary" in events
        assert [(f.old_leader, f.new_leader) for f in app.timeline.failovers()] == [("node1", "node2")]
        # Back one step: before the failover again; the later events are gone from the pane and
        # the timeline behind the banner and stopwatch knows nothing of the failover yet.
        await pilot.press("comma")
        await _shown(pilot, source, 2)
        assert row_of(app, "cluster", "node1")[2] == "leader"
        assert "leader node1 → node2" not in [r[4] for r in texts(app, "events")]
        assert app.timeline.failovers() == []
        assert list(app.history) == script[:3]  # the app keeps the shown one last
        # Seek +10 s goes to the last frame; -10 s to the first.
        await pilot.press("right_square_bracket")
        await _shown(pilot, source, 5)
        await pilot.press("left_square_bracket")
        await _shown(pilot, source, 0)
        # Speed and play.
        await pilot.press("greater_than_sign", "greater_than_sign", "greater_than_sign")
        assert source.speed == 8.0
        await pilot.press("space")
        assert source.playing
        await until(
            pilot, lambda: source.index == 5 and not source.playing, within=10, what="played to the end"
        )
        # The header follows the source on its next refresh: wait for it, do not read it at once.
        await until(pilot, lambda: "end" in _header(app), within=5, what="the header says end")


async def test_replay_has_no_actions_and_no_marker_prompt(tmp_path: Path) -> None:
    path = tmp_path / "rec.db"
    record_script(path, failover_script(2, 0))
    app, source = _replay(path)
    async with app.run_test(size=(120, 30)) as pilot:
        await _shown(pilot, source, 0)
        assert app.actions is None and app.read_only
        assert not any(hasattr(app.screen, f"action_{a}") for a in ("takeover", "reset_stats", "maintenance"))
        await pilot.press("M")
        await pilot.pause()
        assert not isinstance(app.screen, MarkerScreen)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        help_text = str(app.screen.query_one("#help-text").render())
        assert "Replay" in help_text and "seek" in help_text
        assert "replay of" in str(app.screen.query_one("#help-mode").render())


def _live(tmp_path: Path) -> tuple[PgtopApp, ScriptedSource, Recorder]:
    recorder = Recorder.create(tmp_path / "live.db", fx.settings(), parse_limit("1GiB"), role="console")
    source = ScriptedSource(failover_script(2, 2))
    app = PgtopApp(fx.settings().console(), source, clock=fixed_clock(NOW), recorder=recorder)
    return app, source, recorder


async def test_console_records_every_cycle_and_key_m_stamps_a_marker(tmp_path: Path) -> None:
    app, source, recorder = _live(tmp_path)
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        assert recorder.cycles == 4
        await pilot.press("M")
        await until(pilot, lambda: isinstance(app.screen, MarkerScreen), what="marker prompt")
        await pilot.press(*"killed primary", "enter")
        await until(pilot, lambda: not isinstance(app.screen, MarkerScreen), what="prompt closed")
        assert [e.text for e in app.events if e.kind == "marker"] == ["killed primary"]
        assert recorder.markers == 1
        # Esc and an empty text stamp nothing.
        await pilot.press("M")
        await until(pilot, lambda: isinstance(app.screen, MarkerScreen), what="marker prompt")
        await pilot.press("enter")
        await pilot.press("M", "escape")
        await pilot.pause()
        assert recorder.markers == 1
    recorder.close()
    rec = Recording.open(tmp_path / "live.db")
    try:
        assert rec.count() == 4
        assert [(m.text, m.source, m.at) for m in rec.markers()] == [("killed primary", "key M", NOW)]
        kinds = [e.kind for e in rec.events()]
        assert "leader" in kinds and "marker" in kinds
    finally:
        rec.close()


async def test_a_marker_from_the_socket_reaches_the_console(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path)}
    inbox = MarkerInbox("console", environ=env)
    source = ScriptedSource([fx.healthy()])
    app = PgtopApp(fx.settings().console(), source, clock=fixed_clock(NOW), markers=inbox)
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await until(pilot, inbox.ready.is_set, what="socket listening")
        result = await asyncio.to_thread(send_marker, "from another pane", "test", env)
        assert result.received == [f"console (pid {os.getpid()})"]
        found: Callable[[], bool] = lambda: any(e.text == "from another pane" for e in app.events)  # noqa: E731
        await until(pilot, found, what="marker in the timeline")
    assert inbox.path is not None and not inbox.path.exists()
