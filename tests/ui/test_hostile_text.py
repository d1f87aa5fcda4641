"""Server strings with escape sequences and markup, and absurd numbers, reach the screen as text.

Member names, errors, slot and application names, query texts and Patroni's answers are
untrusted: the console must keep running, show them literally without control characters, never
parse them as Textual/Rich markup (``pg[/]1`` used to crash the switchover dialog, and
``[@click=app.quit]`` was an action link), and show numbers no server can send as unknown.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from textual.widgets import Input, OptionList, Static

from pgtop_ha.models.event import Event
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.operator.confirm_modal import ConfirmModal
from pgtop_ha.ui.operator.reset_modal import ResetModal
from pgtop_ha.ui.operator.screen import OperatorScreen
from pgtop_ha.ui.operator.takeover_modal import TakeoverModal
from pgtop_ha.ui.widgets.heartbeat import Heartbeat
from pgtop_ha.ui.widgets.keyed_table import KeyedTable
from tests.actions.test_operator_ui import make_actions, modal, status_text
from tests.actions.test_operator_ui import until as op_until
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures as fx
from tests.ui.harness import make_app, row_of, settled, texts, until

# What the fixture's node1..node3 are called here, and what each must look like on screen.
LEADER = "pg[/]1"  # a MarkupError when parsed
LINK = "[@click=app.quit]x"  # an action link when parsed
ERASER = "a\x1b[2Jb\x1b]0;pwned\x07"  # clear screen, then set the terminal's title
RENAME = {"node1": LEADER, "node2": LINK, "node3": ERASER}
ERASER_SHOWN = "ab"
ERROR = "[/]boom \x1b[31mred\x1b[0m [b]bold[/b]"
ERROR_SHOWN = "[/]boom red [b]bold[/b]"
SLOT = "[b]slot[/b]\x1b[2J"
APP_NAME = "[@click=app.quit]psql\x1b]0;pwned\x07"
REFUSAL = "[/]no \x1b[2J[@click=app.quit]go"
CONTROLS = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}


def _rename(value: Any) -> Any:
    if isinstance(value, str):
        return RENAME.get(value, value)
    if isinstance(value, dict):
        return {_rename(k): _rename(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rename(v) for v in value]
    return value


def hostile(cluster: str = "pgtop-lab") -> ClusterSnapshot:
    """The healthy fixture with hostile names and texts, and numbers no server can send.

    Built through validation, as the collector builds it: the model bounds the numbers.
    """
    data = _rename(fx.healthy().model_dump())
    data["cluster"]["name"] = cluster
    _, link, eraser = data["members"]
    link["timeline"] = 10**400
    eraser.update(lag_bytes=-5, reachable=False, error=ERROR)
    primary = data["nodes"][0]
    primary["current_lsn"] = 2**70
    primary["slots"][0]["slot_name"] = SLOT
    for proc in primary["processes"]:
        proc["application_name"] = APP_NAME
        proc["query"] = "select '[/]'\x1b[2J"
    data["nodes"][1]["timeline"] = 2**64
    data["nodes"][2].update(reachable=False, error=ERROR)
    data["haproxy"]["error"] = ERROR
    data["errors"] = [ERROR]
    data["patroni_config"]["permanent_slots"] = {SLOT: {}, LINK: {}}
    return ClusterSnapshot.model_validate(data)


def all_cells(app: PgtopApp) -> Iterator[str]:
    """Every cell and column label of every table on the current screen."""
    for table in app.screen.query(KeyedTable):
        yield from table.labels()
        for row in table.visible_texts():
            yield from row


def assert_clean(text: str) -> None:
    assert not CONTROLS & set(text.replace("\n", "")), repr(text)  # our own line breaks only
    assert "pwned" not in text, repr(text)


def test_numbers_no_server_can_send_are_unknown() -> None:
    snap = hostile()
    link, eraser, leader = snap.member(LINK), snap.member(ERASER_SHOWN), snap.node(LEADER)
    assert eraser is not None and eraser.hidden == "U+001B U+0007"  # cleaned at parse
    assert link is not None and link.timeline is None  # 10**400
    assert eraser is not None and eraser.lag_bytes == -5  # in range: the pane says "?"
    assert leader is not None and leader.current_lsn is None  # 2**70


async def test_hostile_names_show_as_text_on_every_pane() -> None:
    later = hostile().model_copy(update={"taken_at": fx.T0 + timedelta(seconds=5)})
    app, source = make_app([hostile(), later])
    async with app.run_test(size=(200, 60)) as pilot:  # the dashboard: every pane at once
        await settled(pilot, app, source)
        app.record_event(Event(at=fx.T0, kind="action", node=LINK, text=ERROR, severity=1))
        await pilot.pause()
        cluster = texts(app, "cluster")
        # As text, never markup; past the name column's 14 cells a name ends in "…".
        assert sorted(r[0] for r in cluster) == sorted([LEADER, "[@click=app…", ERASER_SHOWN])
        assert row_of(app, "cluster", "[@click=app…")[7] == "-"  # timelines 10**400 and 2**64: unknown
        assert row_of(app, "cluster", ERASER_SHOWN)[8] == "?"  # lag -5: invalid
        cells = list(all_cells(app))
        for text in cells:
            assert_clean(text)
        for expected in (LEADER, LINK, ERROR_SHOWN, "[b]slot[/b]", "[@click=app.quit]psql"):
            assert any(expected in c for c in cells), expected
        header = app.screen.query_one(Heartbeat).render().plain
        assert_clean(header)
        assert LEADER in header and LINK in header and f"{ERASER_SHOWN} ✖" in header
        for key in "12345678":
            await pilot.press(key)
            await pilot.pause()
            assert app.is_running, f"the console stopped on pane {key}"
            for text in all_cells(app):
                assert_clean(text)
        await pilot.press("0", "slash", *"[/]", "enter")
        await until(pilot, lambda: app.node_filter == "[/]", what="the filter")
        assert "filter: [/]" in app.screen.query_one(Heartbeat).render().plain
        svg = app.export_screenshot()
        assert app.is_running
    assert "\x1b" not in svg and "pwned" not in svg
    assert "pg[/]1" in svg


async def test_switchover_dialog_on_hostile_members(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(412, text=REFUSAL)

    actions, seen = make_actions(tmp_path, handler)
    app = PgtopApp(sections=fx.settings().console(), source=ScriptedSource([hostile()]), actions=actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await op_until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("s")
        await op_until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        dialog = modal(app)
        assert isinstance(dialog, TakeoverModal)
        assert dialog.chosen == LINK  # the raw name goes to Patroni, the shown one is the same
        title = str(dialog.query_one("#title", Static).content)
        assert title == f"Switchover of pgtop-lab: leader {LEADER}"
        prompts = [str(o.prompt) for o in dialog.query_one("#candidates", OptionList).options]
        assert prompts[0].startswith(f"{LINK} ELIGIBLE sync_standby, streaming, tl ?, lag 0 B")
        assert any(p.startswith(ERASER_SHOWN) and "[/]boom red" in p for p in prompts), prompts
        for text in (*prompts, title, str(dialog.query_one("#choice", Static).content)):
            assert_clean(text)
        assert f"→ {LINK}" in str(dialog.query_one("#choice", Static).content)
        await pilot.press(*"pgtop-lab", "enter")
        await op_until(pilot, lambda: dialog.result is not None, "the result")
        status = status_text(app)
        assert "FAILED" in status and "[/]no [@click=app.quit]go" in status
        assert_clean(status)
        await pilot.press("escape")  # the result's message becomes a notification
        await op_until(pilot, lambda: isinstance(app.screen, OperatorScreen), "the dialog closed")
        await pilot.pause()
        assert app.is_running
        shown = [str(n.message) for n in app._notifications]
        assert any("[/]no [@click=app.quit]go" in m for m in shown), shown
        await pilot.press("r")
        await op_until(pilot, lambda: isinstance(app.screen, ResetModal), "the reset dialog")
        targets = [str(o.prompt) for o in modal(app).query_one("#targets", OptionList).options]
        assert any(LEADER in t for t in targets), targets
        for text in targets:
            assert_clean(text)
        await pilot.press("escape")
        await op_until(pilot, lambda: isinstance(app.screen, OperatorScreen), "the reset dialog closed")
        assert app.is_running
    post = next(r for r in seen if r.method == "POST")
    assert json.loads(post.content) == {"leader": LEADER, "candidate": LINK}


async def test_cluster_name_with_markup_and_escapes_is_typed_as_shown(tmp_path: Path) -> None:
    actions, seen = make_actions(tmp_path, lambda r: httpx.Response(200, json={"pause": True}))
    snap = hostile(cluster="lab[/]\x1b[31m")
    app = PgtopApp(
        sections=fx.settings(cluster_name=None).console(), source=ScriptedSource([snap]), actions=actions
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await op_until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        assert "lab[/] " in app.screen.query_one(Heartbeat).render().plain
        await pilot.press("m")
        await op_until(pilot, lambda: isinstance(app.screen, ConfirmModal), "the dialog")
        dialog = modal(app)
        assert dialog.query_one("#confirm", Input).placeholder == "lab[/]"
        await pilot.press(*"lab[/]", "enter")
        await op_until(pilot, lambda: dialog.result is not None, "the result")
        assert app.is_running
    assert [(r.method, r.url.path) for r in seen] == [("PATCH", "/config")]
