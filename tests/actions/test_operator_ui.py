"""The operator screen through Textual's Pilot, on scripted snapshots and a scripted Patroni.

The real Patroni path is covered on the lab (test_lab_ui.py); here the fakes give answers a
real server cannot give on demand (a 412 with a body) and make the screens deterministic.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from pgtop_ha.actions import ActionResult, NodeResult, ResetScope, ResetTarget
from pgtop_ha.actions.audit import AuditLog
from pgtop_ha.actions.backend_signal import BackendTarget
from pgtop_ha.actions.operator import Actions
from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.actions.stats_reset import StatsResetter
from pgtop_ha.judge.eligibility import Candidate
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.operator.modal_base import OperatorModal, result_lines
from pgtop_ha.ui.operator.reset_modal import ResetModal
from pgtop_ha.ui.operator.screen import OperatorScreen
from pgtop_ha.ui.operator.takeover_modal import TakeoverModal, candidate_line, name_width, parse_when
from pgtop_ha.ui.screens.monitor import MonitorScreen
from tests.support.scripted import ScriptedSource
from tests.ui import fixtures

Handler = Callable[[httpx.Request], httpx.Response]


class FakeResetter(StatsResetter):
    """Records what would run; node2 lacks the privilege."""

    def __init__(self) -> None:
        super().__init__(fixtures.settings(postgres={"operator_user": "pgtop_operator"}))
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    async def reset(self, scope: ResetScope, targets: Sequence[ResetTarget]) -> list[NodeResult]:
        self.calls.append((scope.call, tuple(t.name for t in targets)))
        return [
            NodeResult(
                node=t.name,
                ok=t.name != "node2",
                message=f"{t.name}: {scope.call} done"
                if t.name != "node2"
                else "pgtop_operator may not run pg_stat_reset_shared: GRANT ...",
            )
            for t in targets
        ]


def cluster_doc(leader: str) -> dict[str, object]:
    return {
        "members": [
            {
                "name": n,
                "role": "leader" if n == leader else "replica",
                "state": "running" if n == leader else "streaming",
                "timeline": 3,
            }
            for n in fixtures.NAMES
        ]
    }


def make_actions(tmp_path: Path, handler: Handler) -> tuple[Actions, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(record))
    actions = Actions(
        PatroniWriter(["http://127.0.0.1:9"], client),
        FakeResetter(),
        AuditLog(tmp_path / "audit.log", cluster="pgtop-lab"),
        lambda: datetime.now(UTC),
        poll_every_s=0.01,
        takeover_timeout_s=5,
    )
    return actions, seen


def make_app(actions: Actions | None, snap: ClusterSnapshot | None = None) -> PgtopApp:
    source = ScriptedSource([snap or fixtures.healthy()])
    return PgtopApp(sections=fixtures.settings().console(), source=source, actions=actions)


async def until(pilot: Pilot[None], check: Callable[[], bool], what: str, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out after {within}s waiting for {what}")


def modal(app: PgtopApp) -> OperatorModal:
    screen = app.screen
    assert isinstance(screen, OperatorModal), type(screen)
    return screen


def status_text(app: PgtopApp) -> str:
    return str(modal(app).query_one("#status", Static).content)


async def test_s_cluster_name_enter_switches_to_the_healthiest(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(200, text='Successfully switched over to "node2"')
        return httpx.Response(200, json=cluster_doc("node2"))

    actions, seen = make_actions(tmp_path, handler)
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        assert isinstance(app.screen, OperatorScreen)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        dialog = modal(app)
        assert isinstance(dialog, TakeoverModal)
        # node2 is the sync standby of the fixture: the healthiest eligible candidate.
        assert dialog.chosen == "node2"
        await pilot.press(*"pgtop-lab", "enter")
        await until(pilot, lambda: dialog.result is not None, "the result")
        assert "OK" in status_text(app) and "node2 leads" in status_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, OperatorScreen), "the dialog closed")
        assert any(e.kind == "action" and "switchover ok" in e.text for e in app.events)
    post = next(r for r in seen if r.method == "POST")
    assert post.url.path == "/switchover"
    assert json.loads(post.content) == {"leader": "node1", "candidate": "node2"}


async def test_wrong_name_does_nothing(tmp_path: Path) -> None:
    actions, seen = make_actions(tmp_path, lambda r: httpx.Response(500))
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        await pilot.press(*"pgtop", "enter")
        await pilot.pause()
        assert "Type the cluster name pgtop-lab exactly" in status_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, OperatorScreen), "the dialog closed")
    assert seen == []


async def test_refused_switchover_shows_patronis_reason(tmp_path: Path) -> None:
    reason = "candidate name does not match with sync_standby"
    actions, _ = make_actions(tmp_path, lambda r: httpx.Response(412, text=reason))
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        await pilot.press(*"pgtop-lab", "enter")
        await until(pilot, lambda: modal(app).result is not None, "the result")
        text = status_text(app)
        assert "FAILED" in text
        assert f"switchover refused (412): {reason}" in text


async def test_failover_when_no_leader(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(200, text='Successfully failed over to "node2"')
        return httpx.Response(200, json=cluster_doc("node2"))

    snap = fixtures.healthy()
    members = tuple(
        m.model_copy(
            update={
                "role": "replica" if m.name == "node1" else m.role,
                "state": "stopped" if m.name == "node1" else m.state,
            }
        )
        for m in snap.members
    )
    snap = snap.model_copy(
        update={"members": members, "cluster": snap.cluster.model_copy(update={"leader": None})}
    )
    actions, seen = make_actions(tmp_path, handler)
    app = make_app(actions, snap)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        assert not modal(app).query("#when")  # a failover cannot be scheduled
        await pilot.press(*"pgtop-lab", "enter")
        await until(pilot, lambda: modal(app).result is not None, "the result")
    post = next(r for r in seen if r.method == "POST")
    assert post.url.path == "/failover"
    assert json.loads(post.content)["candidate"] in ("node2", "node3")


async def test_reset_dialog_runs_the_shown_function_per_node(tmp_path: Path) -> None:
    actions, _ = make_actions(tmp_path, lambda r: httpx.Response(500))
    resetter = actions.resetter
    assert isinstance(resetter, FakeResetter)
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ResetModal), "the dialog")
        dialog = modal(app)
        assert isinstance(dialog, ResetModal)
        calls = [c.scope.call for c in dialog.choices]
        archiver = calls.index("pg_stat_reset_shared('archiver')")
        await pilot.press(*(["down"] * archiver), "enter")
        preview = str(dialog.query_one("#preview", Static).content)
        assert "SELECT pg_stat_reset_shared('archiver')  on node1  as pgtop_operator" in preview
        await pilot.press("down")  # "all: node1, node2, node3"
        await pilot.press("enter")
        assert "Press Enter again" in str(dialog.query_one("#preview", Static).content)
        assert resetter.calls == []
        await pilot.press("enter")
        await until(pilot, lambda: dialog.result is not None, "the result")
        text = status_text(app)
        assert "ok   node1: pg_stat_reset_shared('archiver') done" in text
        assert "FAIL pgtop_operator may not run pg_stat_reset_shared" in text
    assert resetter.calls == [("pg_stat_reset_shared('archiver')", ("node1", "node2", "node3"))]


async def test_maintenance_toggle_needs_the_name(tmp_path: Path) -> None:
    actions, seen = make_actions(tmp_path, lambda r: httpx.Response(200, json={"pause": True}))
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, OperatorModal), "the dialog")
        await pilot.press("enter")
        await pilot.pause()
        assert seen == []
        await pilot.press(*"pgtop-lab", "enter")
        await until(pilot, lambda: modal(app).result is not None, "the result")
        result: ActionResult | None = modal(app).result
        assert result is not None and result.ok
    assert [(r.method, r.url.path, json.loads(r.content)) for r in seen] == [
        ("PATCH", "/config", {"pause": True})
    ]


async def test_read_only_screen_has_no_write_keys() -> None:
    app = make_app(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        assert type(app.screen).__mro__[1] is MonitorScreen  # MonitorScreen.keyed(), no OperatorScreen
        keys = set(app.screen.active_bindings)
        assert not keys & {"s", "r", "m", "x", "k", "K"}
        await pilot.press("l")  # on the Locks pane, where K would terminate a root blocker
        for key in ("s", "r", "m", "x", "k", "K"):
            await pilot.press(key)
            await pilot.pause()
            assert type(app.screen).__mro__[1] is MonitorScreen


async def test_k_on_the_lock_tree_terminates_its_root_after_its_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[str, int, str]] = []

    async def fake_signal(connector: StatsResetter, kind: str, target: BackendTarget) -> NodeResult:
        sent.append((kind, target.pid, target.node.name))
        return NodeResult(node=target.node.name, ok=True, message=f"pid {target.pid} was terminated")

    monkeypatch.setattr("pgtop_ha.actions.operator.signal_backend", fake_signal)
    actions, _ = make_actions(tmp_path, lambda r: httpx.Response(500))
    app = make_app(actions, fixtures.locked())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("l")
        await pilot.pause()
        await pilot.press("down", "K")  # on a waiter: the root of its tree is the one terminated
        await until(pilot, lambda: isinstance(app.screen, OperatorModal), "the dialog")
        text = " ".join(str(w.content) for w in modal(app).query(Static))
        assert "SELECT pg_terminate_backend(5001, 3000)  on node1  as pgtop_operator" in text
        assert "pid 5001: app / batch, idle in transaction, in its transaction for 12m" in text
        await pilot.press(*"5002", "enter")
        await pilot.pause()
        assert sent == []
        await pilot.press(*["backspace"] * 4, *"5001", "enter")
        await until(pilot, lambda: modal(app).result is not None, "the result")
        said = str(modal(app).status().content).splitlines()
        # One node, one verdict line: its node's line would say the same again.
        assert [x for x in said if "5001 was terminated" in x] == [said[-2]]
        assert re.fullmatch(r"OK \((\d+ ms|[\d.]+ s)\): pid 5001 was terminated", said[-2])
    assert sent == [("terminate", 5001, "node1")]
    entry = actions.audit_entries()[-1]
    assert (entry.action, entry.target, entry.ok) == ("terminate backend 5001 (app batch)", "node1", True)


async def test_k_outside_sessions_and_locks_says_where_it_acts(tmp_path: Path) -> None:
    actions, _ = make_actions(tmp_path, lambda r: httpx.Response(500))
    app = make_app(actions)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.snapshot is not None, "the first snapshot")
        await pilot.press("k")
        await pilot.pause()
        assert type(app.screen).__mro__[1] is OperatorScreen
        assert any("Sessions (a)" in str(n.message) for n in app._notifications)


def test_parse_when() -> None:
    now = datetime(2025, 1, 1, 12, tzinfo=UTC)
    assert parse_when("", now) is None
    assert parse_when("+15m", now) == datetime(2025, 1, 1, 12, 15, tzinfo=UTC)
    assert parse_when("2025-01-01T13:00+00:00", now) == datetime(2025, 1, 1, 13, tzinfo=UTC)
    for bad, why in (("tomorrow", "not understood"), ("2024-01-01T00:00+00:00", "in the past")):
        with pytest.raises(ValueError, match=why):
            parse_when(bad, now)


def test_candidates_line_up_beside_a_member_known_by_its_url() -> None:
    # A member shown by its configured URL ("127.0.0.1:27622") pushed its verdict past the others'.
    plain = Candidate(name="node1", role="replica", state="streaming", timeline=2, lag_bytes=0, eligible=True)
    url = Candidate(name="127.0.0.1:27622", eligible=False, reasons=("not in Patroni's /cluster",))
    width = name_width([plain, url])
    assert width == len("127.0.0.1:27622") and name_width([plain]) == 12
    assert candidate_line(plain, width).index("ELIGIBLE") == candidate_line(url, width).index("BLOCKED")


def test_a_result_names_each_node_only_where_it_says_more() -> None:
    # The verdict repeats the failed node's words; the node's line still says which node.
    nodes = (
        NodeResult(node="node1", ok=True, message="node1: pg_stat_reset() done", duration_s=0.012),
        NodeResult(node="node2", ok=False, message="node2: permission denied", duration_s=1.5),
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    reset = ActionResult(action="reset", ok=False, message="node2: permission denied", started_at=at,
                         duration_s=1.52, nodes=nodes)  # fmt: skip
    assert result_lines(reset) == [
        "FAILED (1.5 s): node2: permission denied",
        "  ok   node1: pg_stat_reset() done (12 ms)",
        "  FAIL node2: permission denied (1.5 s)",
    ]
