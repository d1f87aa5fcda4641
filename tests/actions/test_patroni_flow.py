"""Switchover/failover/pause flows against a scripted Patroni (httpx.MockTransport): the HTTP
answers here (412 with a reason, a member that refuses connections) are what a fake is for."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from pgtop_ha.actions.audit import AuditLog
from pgtop_ha.actions.operator import Actions
from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.actions.stats_reset import StatsResetter
from pgtop_ha.settings import Settings
from tests.support.clocks import StepClock

Handler = Callable[[httpx.Request], httpx.Response]


def cluster(leader: str) -> dict[str, Any]:
    return {
        "members": [
            {
                "name": n,
                "role": "leader" if n == leader else "replica",
                "state": "running" if n == leader else "streaming",
                "timeline": 4,
                "api_url": f"http://127.0.0.1:{25420 + i}/patroni",
            }
            for i, n in enumerate(("node1", "node2", "node3"))
        ]
    }


def make(
    tmp_path: Path, handler: Handler, urls: tuple[str, ...] = ("http://127.0.0.1:25420",), timeout: float = 60
) -> tuple[Actions, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    client = httpx.AsyncClient(
        transport=httpx.MockTransport(record), auth=httpx.BasicAuth("patroni", "s3cret")
    )
    writer = PatroniWriter(urls, client)
    audit = AuditLog(tmp_path / "audit.log", cluster="pgtop-lab")
    actions = Actions(
        writer, StatsResetter(Settings()), audit, StepClock(), takeover_timeout_s=timeout, poll_every_s=0
    )
    return actions, seen


async def test_switchover_waits_for_the_candidate_to_lead(tmp_path: Path) -> None:
    polls = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            assert json.loads(request.content) == {"leader": "node1", "candidate": "node3"}
            return httpx.Response(200, text='Successfully switched over to "node3"')
        polls["n"] += 1
        return httpx.Response(200, json=cluster("node1" if polls["n"] < 3 else "node3"))

    actions, seen = make(tmp_path, handler)
    steps: list[str] = []
    result = await actions.switchover("node1", "node3", progress=steps.append)
    assert result.ok, result.message
    assert result.new_leader == "node3"
    assert result.status == 200
    assert "node3 leads after" in result.message
    assert result.duration_s > 0
    assert steps[0] == "POST /switchover node1 → node3"
    assert any(s.startswith("waiting: leader is node1") for s in steps)
    assert seen[0].headers["authorization"].startswith("Basic ")
    # Members' REST roots learnt from /cluster are there for the next request.
    assert "http://127.0.0.1:25422" in actions.writer.urls
    line = json.loads((tmp_path / "audit.log").read_text())
    assert (line["action"], line["target"], line["ok"]) == ("switchover", "node3", True)
    assert "s3cret" not in (tmp_path / "audit.log").read_text()
    assert actions.audit_entries()[0].target == "node3"


async def test_refused_switchover_shows_patronis_reason_and_does_not_poll(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(412, text="switchover is not possible: no good candidates have been found")

    actions, seen = make(tmp_path, handler)
    result = await actions.switchover("node1", "node2")
    assert not result.ok
    assert result.status == 412
    assert result.reason == "switchover is not possible: no good candidates have been found"
    assert result.message.startswith("switchover refused (412): switchover is not possible")
    assert [r.method for r in seen] == ["POST"]
    assert json.loads((tmp_path / "audit.log").read_text())["status"] == 412


async def test_no_new_leader_before_timeout_is_a_failure(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(503, text="Switchover status unknown")
        return httpx.Response(200, json=cluster("node1"))

    actions, _ = make(tmp_path, handler, timeout=5)
    result = await actions.switchover("node1", "node2")
    assert not result.ok
    assert result.status == 503
    assert result.reason == "Switchover status unknown"


async def test_scheduled_switchover_is_sent_with_time(tmp_path: Path) -> None:
    at = datetime(2030, 5, 1, 3, 0, tzinfo=UTC)
    bodies: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(202, text="Switchover scheduled")

    actions, seen = make(tmp_path, handler)
    result = await actions.switchover("node1", "node2", scheduled_at=at)
    assert result.ok
    assert bodies == [{"leader": "node1", "candidate": "node2", "scheduled_at": "2030-05-01T03:00:00+00:00"}]
    assert "scheduled for 2030-05-01T03:00:00+00:00" in result.message
    assert len(seen) == 1


async def test_unreachable_member_is_skipped_for_the_next(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.port == 25420:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"pause": True})

    actions, seen = make(tmp_path, handler, urls=("http://127.0.0.1:25420", "http://127.0.0.1:25421"))
    result = await actions.set_pause(True)
    assert result.ok, result.message
    assert [(r.method, r.url.port) for r in seen] == [("PATCH", 25420), ("PATCH", 25421)]
    assert json.loads(seen[1].content) == {"pause": True}
    assert actions.writer.urls[0] == "http://127.0.0.1:25421"


async def test_read_timeout_on_a_write_is_not_retried_elsewhere(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    actions, seen = make(tmp_path, handler, urls=("http://127.0.0.1:25420", "http://127.0.0.1:25421"))
    result = await actions.cancel_switchover()
    assert not result.ok
    assert len(seen) == 1
    assert "may still take effect" in result.message


async def test_cancel_without_schedule_reports_404_text(tmp_path: Path) -> None:
    actions, seen = make(tmp_path, lambda r: httpx.Response(404, text="no switchover is scheduled"))
    result = await actions.cancel_switchover()
    assert (result.ok, result.status, result.reason) == (False, 404, "no switchover is scheduled")
    assert seen[0].method == "DELETE"


async def test_bad_credentials_explained(tmp_path: Path) -> None:
    actions, _ = make(tmp_path, lambda r: httpx.Response(401, text="no auth header received"))
    result = await actions.set_pause(False)
    assert not result.ok
    assert "PGTOP_HA_PATRONI_PASSWORD" in result.message


async def test_failover_posts_candidate_only(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            assert json.loads(request.content) == {"candidate": "node2"}
            return httpx.Response(200, text='Successfully failed over to "node2"')
        return httpx.Response(200, json=cluster("node2"))

    actions, _ = make(tmp_path, handler)
    result = await actions.failover("node2")
    assert result.ok and result.new_leader == "node2"
    assert result.action == "failover"


async def test_no_url_is_one_line(tmp_path: Path) -> None:
    actions, seen = make(tmp_path, lambda r: httpx.Response(200), urls=())
    result = await actions.set_pause(True)
    assert not result.ok
    assert "set patroni.urls" in result.message
    assert seen == []
