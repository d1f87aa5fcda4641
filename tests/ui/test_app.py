"""The console under Pilot with scripted snapshots: content, states as words, keys, in-place updates."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest

from pgtop_ha.errors import ConfigError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.panes.registry import PANES
from pgtop_ha.ui.screens.filter import FilterScreen
from pgtop_ha.ui.screens.help import HelpScreen
from pgtop_ha.ui.widgets.heartbeat import Heartbeat
from tests.support.clocks import fixed_clock
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures as fx
from tests.ui.harness import NOW, make_app, row_of, screen, settled, table, texts, until


def header(app: PgtopApp) -> str:
    """The heartbeat line's text."""
    hb = app.screen.query_one(Heartbeat)
    return hb.render().plain


async def test_cluster_pane_shows_leader_and_replicas() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        assert texts(app, "overview") == []  # no problems: the overview shows none, not an empty box
        assert [r[0] for r in texts(app, "overview-members")] == ["✔ node1", "✔ node2", "✔ node3"]
        await pilot.press("1")
        await pilot.pause()
        node1 = row_of(app, "cluster", "node1")
        node2 = row_of(app, "cluster", "node2")
        node3 = row_of(app, "cluster", "node3")
        assert node1[1:4] == ["✔ OK", "leader", "primary"]
        assert node2[1:4] == ["✔ OK", "sync", "standby"]
        assert node3[1:4] == ["✔ OK", "replica", "standby"]
        # Writer routes to the leader only, readers to the replicas.
        assert (node1[5], node1[6]) == ("UP", "DOWN")
        assert (node2[5], node2[6]) == ("DOWN", "UP")
        assert "READ-ONLY" in header(app)


async def test_kill_primary_contradiction_is_crit_in_words() -> None:
    app, source = make_app([fx.healthy(), fx.kill_primary()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        top = texts(app, "overview")[0]  # problems take the top of the 80x24 overview
        assert top[0] == "✖ CRIT" and top[1].startswith("node1: PG DOWN, still routed")
        over = row_of(app, "overview-members", "✖ node1")
        assert over[1:4] == ["leader", "running", "DOWN"] and over[7] == "W"
        await pilot.press("1")
        await pilot.pause()
        node1 = row_of(app, "cluster", "node1")
        assert node1[1] == "✖ CRIT"
        assert node1[2] == "leader"
        assert node1[3] == "DOWN"
        assert node1[4] == "PG DOWN, still routed"
        assert node1[5] == "UP"  # HAProxy still sends writes there
        # The heartbeat shows node1 failed (CRIT as its row; last success 13 s before the clock's
        # now), and the fast cadence whole: at 80 columns the nodes go compact to leave it room.
        assert header(app).endswith(" node1 ✖10s node2 ✔ node3 ✔  0.25s fast")


async def test_failover_shows_old_leader_unreachable_new_leader_leading() -> None:
    app, source = make_app([fx.healthy(), fx.failed_over()], now=fx.T0 + timedelta(seconds=41))
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("1")
        await pilot.pause()
        node1 = row_of(app, "cluster", "node1")
        node2 = row_of(app, "cluster", "node2")
        assert node1[1] == "✖ CRIT" and node1[3] == "DOWN"
        assert node1[10].startswith("✖ REST+PG")
        assert node2[2:4] == ["leader", "primary"] and node2[5] == "UP"
        await pilot.press("8")
        await pilot.pause()
        events = [r[4] for r in texts(app, "events")]
        assert "leader node1 → node2" in events
        assert "PostgreSQL unreachable" in events
        assert "PostgreSQL standby → primary" in events


@pytest.mark.parametrize(
    ("key", "pane", "spec", "expect"),
    [
        ("1", "cluster", "cluster", "node1"),
        ("2", "haproxy", "haproxy", "pg_writer"),
        ("3", "replication", "replication", "node2"),
        ("4", "slots", "slots", "lab_sub"),
        ("5", "progress", "progress", "sync_big"),
        ("6", "archiver", "archiver", "000000030000000000000002"),
        ("7", "memory", "memory", "checkpointer"),
        ("8", "events", "events", "replica lag"),
    ],
)
async def test_number_keys_switch_panes(key: str, pane: str, spec: str, expect: str) -> None:
    busy = fx.subscriber_copy(fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=1))))
    app, source = make_app([fx.healthy(), busy])
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot, app, source)
        if spec == "events":
            app.record_event(
                fx.event("node3", "replica lag 300 MiB")  # also proves record_event shows up
            )
        await pilot.press(key)
        await pilot.pause()
        scr = screen(app)
        assert scr.view == pane
        assert scr.panes[pane].display
        hidden = [p for p, w in scr.panes.items() if p != pane and w.region.height > 0]
        assert hidden == []
        flat = " ".join(" ".join(r) for r in texts(app, spec))
        assert expect in flat
        await pilot.press("0")
        await pilot.pause()
        assert scr.view == "overview"


async def test_pane_contents_in_detail() -> None:
    busy = fx.subscriber_copy(fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=1))))
    # Read a second after the snapshot: 20 s later the standbys' last replies would be past
    # two status intervals, which the Replication pane rightly marks (models/derive.py).
    app, source = make_app([fx.healthy(), busy], now=busy.taken_at + timedelta(seconds=1))
    async with app.run_test(size=(160, 48)) as pilot:
        await settled(pilot, app, source)
        rep = {r[1]: r for r in texts(app, "replication")}
        assert rep["node3"][2] == "✖ CRIT" and rep["node3"][8] == "300 MiB"
        assert rep["node3"][11] == "1m"  # 75 s of replay lag, shown coarsely
        assert rep["node2"][4] == "sync" and rep["node2"][2] == "✔ OK"
        slots = {(r[0], r[1]): r for r in texts(app, "slots")}
        assert slots[("node1", "lab_sub")][5] == "48 MiB"
        assert texts(app, "slots-matrix") == [["lab_sub", "Patroni", "✔ yes", "✔ yes", "✔ yes"]]
        copies = {(r[0], r[1]): r for r in texts(app, "progress")}
        pub = copies[("node1", "COPY publisher")]
        assert pub[5] == "~25%" and pub[7] == "~1.2 GiB"
        assert pub[4].startswith("███")
        assert ("node3", "subscription") in copies
        arch = {r[0]: r for r in texts(app, "archiver")}
        assert arch["node1"][2] == "0" and arch["node1"][5] == "1m"
        mem = texts(app, "memory")
        assert mem[0][2].startswith("TOTAL 3 procs") and mem[0][4] == "21 MiB"
        assert mem[1][2].startswith("HugePages 512")  # the host's HugePages under the total
        assert mem[2][2] == "checkpointer"  # largest Pss first
        hap = texts(app, "haproxy")
        assert hap[0][:5] == ["writer", "pg_writer", "(pool)", "✔ OK", "1/3 UP"]


async def test_states_are_words_in_mono_theme() -> None:
    app, source = make_app([fx.healthy(), fx.lagging(fx.kill_primary())], settings=fx.settings(theme="mono"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        assert app.theme == "mono"
        assert {r[0] for r in texts(app, "overview")} >= {"✖ CRIT"}
        await pilot.press("1")
        await pilot.pause()
        words = {r[1] for r in texts(app, "cluster")}
        assert words == {"✖ CRIT", "✔ OK"}


def test_no_color_picks_mono(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = make_app([])
    assert app.console_theme.theme.name == "mono"


def test_unknown_theme_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match=r"theme 'nope' not found; use one of .*dark.*mono"):
        make_app([], settings=fx.settings(theme="nope"))


async def test_in_place_update_touches_only_changed_cells() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("1")
        await pilot.pause()
        cluster = table(app, "cluster")
        before = cluster.touched
        # Same values, a second later: nothing to repaint.
        source.push(fx.healthy(fx.T0 + timedelta(seconds=1)))
        await until(pilot, lambda: app.received == 2)
        await pilot.pause()
        assert cluster.touched == before
        # node3 lags: only its Health, Problem and Lag cells change.
        source.push(fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=2)), lag=20 * fx.MiB))
        await until(pilot, lambda: app.received == 3)
        await pilot.pause()
        assert cluster.touched - before == 3
        assert row_of(app, "cluster", "node3")[1] == "▲ WARN"


async def test_a_calm_header_is_not_repainted_each_second_and_a_failed_read_repaints_it() -> None:
    # The header's seconds drew a frame every second of a calm screen (an eighth of the quiet
    # console's CPU, issue 10): the same cluster a second later now leaves the header alone.
    now = [fx.T0]
    source = ScriptedSource([fx.healthy()])
    app = PgtopApp(fx.settings().console(), source, clock=lambda: now[0])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        line = app.screen.query_one(Heartbeat)
        before, shown = line.repaints, header(app)
        for second in range(1, 6):  # 03:04:06 to 03:04:10, every node fresh
            now[0] = fx.T0 + timedelta(seconds=second)
            source.push(fx.healthy(now[0]))
            await until(pilot, lambda: app.received == source.sent)
            await pilot.pause()
        assert line.repaints == before and header(app) == shown, header(app)
        killed = fx.kill_primary(fx.T0 + timedelta(seconds=6))
        now[0] = killed.taken_at
        source.push(killed)
        await until(pilot, lambda: line.repaints > before, what="the header repainted")
        assert f"last {killed.taken_at.astimezone():%H:%M:%S}" in header(app) and "✖" in header(app)


async def test_hidden_panes_do_no_work() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        # Never shown in the 80x24 overview: not even its tables exist yet (first frame, issue 10).
        assert not screen(app).panes["memory"].tables
        assert not app.screen.query("#t-memory")
        await pilot.press("7")
        await until(pilot, lambda: bool(app.screen.query("#t-memory")) and table(app, "memory").touched > 0)
        assert app.screen.focused is table(app, "memory")  # focus followed the late tables


async def test_pause_freezes_display_and_resume_catches_up() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("1", "p")
        await pilot.pause()
        assert app.paused and "PAUSED" in header(app)
        source.push(fx.kill_primary())
        await until(pilot, lambda: app.received == 2)
        await pilot.pause()
        assert row_of(app, "cluster", "node1")[1] == "✔ OK"  # frozen
        await pilot.press("p")
        await until(pilot, lambda: row_of(app, "cluster", "node1")[1] == "✖ CRIT")
        assert "PAUSED" not in header(app)


async def test_plus_minus_change_the_poll_interval() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        assert app.interval == 1.0
        await pilot.press("plus")
        assert app.interval == 2.0
        await pilot.press("minus", "minus")
        assert app.interval == 0.5
        source.push(fx.healthy(fx.T0 + timedelta(seconds=1)))
        await until(pilot, lambda: source.sent == 2)
        assert source.intervals[-1] == 0.5  # the source reads the interval every cycle
        await pilot.pause()
        assert "every 0.5s" in header(app)


async def test_slash_filters_every_pane_by_node() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, FilterScreen))
        await pilot.press(*"node2", "enter")
        await until(pilot, lambda: app.node_filter == "node2")
        await pilot.pause()
        assert [r[0] for r in texts(app, "overview-members")] == ["✔ node2"]
        await pilot.press("1")
        await pilot.pause()
        assert [r[0] for r in texts(app, "cluster")] == ["node2"]
        assert "filter: node2" in header(app)
        await pilot.press("2")
        await pilot.pause()
        assert {r[2] for r in texts(app, "haproxy")} == {"node2"}
        await pilot.press("escape", "escape")  # back to overview, then clear the filter
        await pilot.pause()
        assert app.node_filter == ""
        assert len(texts(app, "overview-members")) == 3


async def test_question_mark_shows_help_and_escape_closes_it() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))
        assert not isinstance(app.screen, HelpScreen)


async def test_sort_survives_refresh_and_cursor_stays_on_its_row() -> None:
    lagging = fx.lagging(fx.healthy(), lag=20 * fx.MiB)
    app, source = make_app([lagging])
    async with app.run_test(size=(120, 30)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("1")
        cluster = table(app, "cluster")
        await pilot.press("down", "down")  # cursor on node3
        assert texts(app, "cluster")[cluster.cursor_row][0] == "node3"
        for _ in range(9):  # Member, Health, Role, PG, Problem, Writer, Reader, TL, Lag
            await pilot.press("o")
        assert cluster.sort_state == ("lag", False)
        await pilot.press("O")
        assert cluster.sort_state == ("lag", True)
        assert texts(app, "cluster")[0][0] == "node3"  # largest lag first
        assert texts(app, "cluster")[cluster.cursor_row][0] == "node3"
        # A refresh where node2 now lags more: order follows, sort and cursor row survive.
        worse = fx.lagging(fx.healthy(fx.T0 + timedelta(seconds=1)), lag=20 * fx.MiB)
        members = tuple(
            m.model_copy(update={"lag_bytes": 90 * fx.MiB}) if m.name == "node2" else m for m in worse.members
        )
        source.push(worse.model_copy(update={"members": members}))
        await until(pilot, lambda: texts(app, "cluster")[0][0] == "node2")
        assert cluster.sort_state == ("lag", True)
        assert texts(app, "cluster")[cluster.cursor_row][0] == "node3"


async def test_resize_switches_between_overview_and_dashboard() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        scr = screen(app)
        assert scr.visible_panes() == ["overview"]
        assert not scr.panes["memory"].display or scr.panes["memory"].region.height == 0
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: scr.dashboard)
        await pilot.pause()
        key_only = {p.id for p in PANES if not p.place.dashboard}
        assert {"overview", "probes", "pgbackrest"} <= key_only
        assert all(p.region.height > 0 for k, p in scr.panes.items() if k not in key_only)
        assert all(scr.panes[k].region.height == 0 for k in key_only)  # reached by key only
        assert table(app, "memory").touched > 0
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: not scr.dashboard)


async def test_key_is_handled_while_the_source_hangs() -> None:
    class Hanging:
        """A source stuck in I/O forever (a SIGSTOPped node with no timeout)."""

        async def run(
            self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
        ) -> None:
            on_snapshot(fx.healthy())
            await asyncio.Event().wait()

        async def aclose(self) -> None:
            return None

    app = PgtopApp(fx.settings().console(), Hanging(), clock=fixed_clock(NOW))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.snapshot is not None)
        loop = asyncio.get_running_loop()
        handled: list[float] = []
        scr = screen(app)
        scr.watch(scr, "view", lambda _: handled.append(loop.time()), init=False)
        started = loop.time()
        await pilot.press("3")
        await until(pilot, lambda: bool(handled), within=1.0, what="key handled")
        assert handled[0] - started < 0.2


async def test_source_failure_is_one_line_in_the_header() -> None:
    class Broken:
        async def run(
            self, on_snapshot: Callable[[ClusterSnapshot], object], interval: Callable[[], float]
        ) -> None:
            raise RuntimeError("cannot reach anything")

        async def aclose(self) -> None:
            return None

    app = PgtopApp(fx.settings().console(), Broken(), clock=fixed_clock(NOW))
    async with app.run_test(size=(120, 24)) as pilot:
        await until(pilot, lambda: app.source_error is not None)
        await pilot.pause()
        assert "poller stopped: RuntimeError: cannot reach anything" in header(app)


async def test_app_closes_the_source_on_exit() -> None:
    app, source = make_app([fx.healthy()])
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        await pilot.press("q")
    assert source.closed


async def test_the_heap_is_settled_once_the_first_snapshot_is_on_screen() -> None:
    settles: list[int] = []
    source = ScriptedSource([fx.healthy()])
    app = PgtopApp(
        fx.settings().console(), source, clock=fixed_clock(NOW), settle=lambda: settles.append(app.received)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot, app, source)
        await until(pilot, lambda: settles != [], what="settle called")
        assert texts(app, "overview-members") != []  # drawn before it
        source.push(fx.healthy(fx.T0 + timedelta(seconds=1)))
        await until(pilot, lambda: app.received == 2)
        await pilot.pause()
        assert settles == [1]  # once: later snapshots leave the collector alone


async def test_the_heap_is_settled_even_when_no_snapshot_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    # The collector is off from start-up until settle (pgtop_ha/entry.py): a poll task that never
    # delivers must not leave it off for the console's whole life.
    monkeypatch.setattr("pgtop_ha.ui.app.SETTLE_LATEST_S", 0.2)
    settles: list[int] = []
    source = ScriptedSource([])
    app = PgtopApp(
        fx.settings().console(), source, clock=fixed_clock(NOW), settle=lambda: settles.append(app.received)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: settles != [], what="settle called without a snapshot")
        assert settles == [0]
        monkeypatch.setattr("pgtop_ha.ui.app.SETTLE_AFTER_S", 0.01)
        tried: list[int] = []
        once = app._settle_once

        def counted() -> None:
            tried.append(app.received)
            once()

        monkeypatch.setattr(app, "_settle_once", counted)
        source.push(fx.healthy())
        await until(pilot, lambda: tried == [1], what="the first snapshot's settle tried")
        assert settles == [0]  # and not again for the first snapshot
