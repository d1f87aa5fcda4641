"""The operator and read-only consoles driven through Pilot against the real lab."""

from __future__ import annotations

import asyncio
import string
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from pgtop_ha.actions import build_actions
from pgtop_ha.collect.poller import Poller
from pgtop_ha.judge.eligibility import takeover_plan
from pgtop_ha.lab.cluster import Lab
from pgtop_ha.lab.layout import NODE_NAMES
from pgtop_ha.settings import Settings
from pgtop_ha.ui.app import PgtopApp
from pgtop_ha.ui.operator.modal_base import OperatorModal
from pgtop_ha.ui.operator.reset_modal import ResetModal
from pgtop_ha.ui.operator.takeover_modal import TakeoverModal
from pgtop_ha.ui.screens.monitor import MonitorScreen

pytestmark = pytest.mark.lab

# A loopback HTTP proxy in front of Patroni's REST API that records every request's method;
# member URLs inside /cluster answers are rewritten to the proxies, so a console pointed at
# them never reaches Patroni any other way.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class Capture:
    """Every (method, path) the proxies saw, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.rewrite: dict[str, str] = {}

    def add(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def methods(self) -> set[str]:
        with self._lock:
            return {m for m, _ in self.requests}

    def writes(self) -> list[tuple[str, str]]:
        with self._lock:
            return [r for r in self.requests if r[0] not in ("GET", "HEAD", "OPTIONS")]

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for _, p in self.requests if p == path)


def _handler(upstream: str, capture: Capture) -> type[BaseHTTPRequestHandler]:
    client = httpx.Client(base_url=upstream, timeout=10)

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            capture.add(self.command, self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"
            }
            resp = client.request(self.command, self.path, content=body, headers=headers)
            data = resp.content
            if self.path.startswith("/cluster"):
                text = data.decode()
                for real, proxied in capture.rewrite.items():
                    text = text.replace(real, proxied)
                data = text.encode()
            self.send_response(resp.status_code)
            for k, v in resp.headers.items():
                if k.lower() not in HOP_BY_HOP:
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _forward

    return Forward


@contextmanager
def capture_proxies(upstreams: list[str]) -> Iterator[tuple[list[str], Capture]]:
    """One proxy per upstream URL (http://127.0.0.1:PORT); yields their URLs and the capture."""
    capture = Capture()
    servers: list[ThreadingHTTPServer] = []
    urls: list[str] = []
    for upstream in upstreams:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream, capture))
        server.daemon_threads = True
        servers.append(server)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        urls.append(url)
        capture.rewrite[upstream.removeprefix("http://")] = url.removeprefix("http://")
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield urls, capture
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


REFUSAL = "switchover is not possible: no good candidates have been found"
# Everything that would show a reset: each view's stats_reset, and the calls themselves.
RESET_STATE_SQL = """
SELECT concat_ws(' | ',
  (SELECT stats_reset FROM pg_stat_archiver),
  (SELECT stats_reset FROM pg_stat_bgwriter),
  (SELECT stats_reset FROM pg_stat_wal),
  (SELECT string_agg(slot_name || '=' || coalesce(stats_reset::text, '-'), ',' ORDER BY slot_name)
     FROM pg_stat_replication_slots),
  (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()),
  (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
    WHERE query ILIKE '%pg_stat_reset%' AND query NOT ILIKE '%pg_stat_statements%'))
"""


async def until(pilot: Pilot[None], check: Callable[[], bool], what: str, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"timed out after {within}s waiting for {what}")


def reset_state(lab: Lab) -> dict[str, str]:
    return {name: lab.psql(RESET_STATE_SQL, node=name) for name in NODE_NAMES}


def status_text(app: PgtopApp) -> str:
    return str(app.screen.query_one("#status", Static).content)


def operator_app(settings: Settings, tmp_path: Path) -> PgtopApp:
    settings = settings.model_copy(update={"audit_log": tmp_path / "audit.log"})
    return PgtopApp(
        sections=settings.console(),
        source=Poller.from_settings(settings),
        actions=build_actions(settings),
    )


def ready(app: PgtopApp, leader: str) -> bool:
    snap = app.snapshot
    if snap is None or snap.cluster.leader != leader:
        return False
    return takeover_plan(snap).default is not None


async def test_switchover_through_the_ui(lab: Lab, lab_settings: Settings, tmp_path: Path) -> None:
    leader = lab.leader()
    assert leader is not None
    app = operator_app(lab_settings, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ready(app, leader), "a snapshot with an eligible candidate")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, TakeoverModal), "the dialog")
        dialog = app.screen
        assert isinstance(dialog, TakeoverModal)
        chosen = dialog.chosen
        assert chosen is not None and chosen != leader
        await pilot.press(*"pgtop-lab", "enter")
        await until(pilot, lambda: dialog.result is not None, "the switchover's result", 90)
        assert dialog.result is not None and dialog.result.ok, status_text(app)
        assert f"{chosen} leads" in status_text(app)
        assert lab.leader() == chosen
        await pilot.press("escape")
        # The console itself shows the new leader within a few polls.
        await until(
            pilot,
            lambda: app.snapshot is not None and app.snapshot.cluster.leader == chosen,
            "the console to show it",
            30,
        )
        assert any(e.kind == "action" and e.node == chosen for e in app.events)
    assert '"action":"switchover"' in (tmp_path / "audit.log").read_text()


class _Refuse(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = REFUSAL.encode()
        self.send_response(412)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def refusing_patroni() -> Iterator[str]:
    """A fake Patroni on 127.0.0.1 that answers every POST with 412 and Patroni's reason."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_refused_switchover_shows_the_reason(
    lab: Lab, lab_settings: Settings, refusing_patroni: str, tmp_path: Path
) -> None:
    leader = lab.leader()
    assert leader is not None
    write_settings = lab_settings.model_copy(
        update={
            "audit_log": tmp_path / "audit.log",
            "patroni": lab_settings.patroni.model_copy(update={"urls": (refusing_patroni,)}),
        }
    )
    app = PgtopApp(
        sections=lab_settings.console(),
        source=Poller.from_settings(lab_settings),
        actions=build_actions(write_settings),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ready(app, leader), "a snapshot with an eligible candidate")
        await pilot.press("s", *"pgtop-lab", "enter")
        await until(
            pilot,
            lambda: isinstance(app.screen, OperatorModal) and app.screen.result is not None,
            "the refusal",
        )
        assert f"switchover refused (412): {REFUSAL}" in status_text(app)
    assert lab.leader() == leader


async def test_read_only_every_key_writes_nothing(lab: Lab, lab_settings: Settings) -> None:
    upstreams = [lab.layout.patroni_url(i) for i in range(len(NODE_NAMES))]
    before = reset_state(lab)
    with capture_proxies(upstreams) as (proxies, capture):
        settings = lab_settings.model_copy(
            update={
                "read_only": True,
                "patroni": lab_settings.patroni.model_copy(update={"urls": tuple(proxies)}),
            }
        )
        app = PgtopApp(sections=settings.console(), source=Poller.from_settings(settings), actions=None)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(
                pilot,
                lambda: app.snapshot is not None and app.snapshot.cluster.leader is not None,
                "the first snapshot",
            )
            assert type(app.screen).__mro__[1] is MonitorScreen
            known = set(app.screen.active_bindings)
            named = [
                "enter",
                "escape",
                "tab",
                "shift+tab",
                "up",
                "down",
                "left",
                "right",
                "home",
                "end",
                "pageup",
                "pagedown",
                "space",
                "backspace",
                "delete",
                *(f"f{i}" for i in range(1, 13)),
                *(f"ctrl+{c}" for c in "abdefghklnoprstuvwxyz"),
            ]
            chars = list(string.ascii_letters + string.digits + string.punctuation)
            keys = [k for k in [*sorted(known), *chars, *named] if k not in ("q", "ctrl+q", "ctrl+c")]
            for key in keys:
                # Each key alone, then Esc to leave any dialog it opened (help, filter).
                await pilot.press(key)
                await pilot.press("escape")
                assert app.is_running, f"the app stopped after {key!r}"
            served = capture.count("/cluster")
            await until(pilot, lambda: capture.count("/cluster") > served, "another poll through the proxies")
        assert capture.writes() == []
        assert "GET" in capture.methods()
        # Control: a write through a proxy is seen (DELETE /switchover with none scheduled: 404).
        secret = lab_settings.patroni_secret()
        auth = (settings.patroni.user or "", secret.get_secret_value() if secret else "")
        async with httpx.AsyncClient(auth=auth, timeout=10) as client:
            answer = await client.delete(f"{proxies[0]}/switchover")
        assert answer.status_code == 404
        assert capture.writes() == [("DELETE", "/switchover")]
    assert reset_state(lab) == before


async def test_archiver_reset_through_the_ui(lab: Lab, lab_settings: Settings, tmp_path: Path) -> None:
    leader = lab.leader()
    assert leader is not None
    lab.psql(
        "CREATE TABLE IF NOT EXISTS archiver_probe (x int); INSERT INTO archiver_probe "
        "VALUES (1); SELECT pg_switch_wal();",
        node=leader,
    )
    count = "SELECT archived_count FROM pg_stat_archiver"
    deadline = time.monotonic() + 60
    while int(lab.psql(count, node=leader)) == 0:
        assert time.monotonic() < deadline, "no segment archived within 60s"
        await asyncio.sleep(0.2)  # polling for the archiver, not synchronising on time
    app = operator_app(lab_settings, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ready(app, leader), "a snapshot of the cluster")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ResetModal), "the dialog")
        dialog = app.screen
        assert isinstance(dialog, ResetModal)
        calls = [c.scope.call for c in dialog.choices]
        archiver = calls.index("pg_stat_reset_shared('archiver')")
        assert dialog.choices[archiver].default_nodes == (leader,)
        await pilot.press(*(["down"] * archiver), "enter", "enter", "enter")
        await until(pilot, lambda: dialog.result is not None, "the result")
        assert dialog.result is not None and dialog.result.ok, status_text(app)
        assert f"ok   {leader}: pg_stat_reset_shared('archiver') done" in status_text(app)
    assert int(lab.psql(count, node=leader)) == 0
