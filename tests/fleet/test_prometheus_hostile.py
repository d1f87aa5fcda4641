"""The Prometheus reader against down, failing and hostile servers: one line, no crash, bounded."""

from __future__ import annotations

import pytest

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.collect.prometheus import PrometheusError, PrometheusReader
from tests.fleet.synth import FakeFleet, query_of
from tests.hostile.fakes import answer, fake_server, json_answer
from tests.support.ports import free_port


async def _error(url: str) -> str:
    source = PrometheusFleet(PrometheusReader(url, timeout=2), FleetQueries())
    with pytest.raises(PrometheusError) as info:
        await source.refresh()
    text = str(info.value)
    assert "\n" not in text and "\x1b" not in text and len(text) < 300
    return text


async def test_prometheus_down() -> None:
    assert "connection refused" in await _error(f"http://127.0.0.1:{free_port()}")


@pytest.mark.parametrize(
    ("handler", "fragment"),
    [
        (answer(b"oops", "500 Internal Server Error"), "HTTP 500"),
        (answer(b"", "503 Service Unavailable"), "HTTP 503"),
        (
            json_answer(b'{"status":"error","error":"bad\\u001b[2J query [red]x[/red]"}', "400 Bad Request"),
            "query failed",
        ),
        (answer(b"<html>login</html>"), "not JSON"),
        (answer(b"", "302 Found", {"Location": "http://127.0.0.1:1/login"}), "redirected"),
        (answer(b"x" * 100, "200 OK", {"Content-Encoding": "gzip"}), "compressed answer refused"),
        (answer(b"x" * 100, "200 OK", {"Content-Length": str(10**10)}, length=False), "too large"),
    ],
)
async def test_prometheus_errors_are_one_line(handler, fragment) -> None:  # type: ignore[no-untyped-def]
    async with fake_server({"/api/v1/": handler}) as server:
        assert fragment in await _error(server.url)


async def test_huge_answer_is_refused() -> None:
    body = b'{"status":"success","data":{"result":[' + b'{"metric":{},"value":[1,"1"]},' * 400_000 + b"1]}}"
    async with fake_server({"/api/v1/": json_answer(body)}) as server:
        assert "too large" in await _error(server.url)


async def test_get_only_no_credentials_and_a_handful_of_queries() -> None:
    fleet = FakeFleet(5)

    async def handle(got, writer):  # type: ignore[no-untyped-def]
        await json_answer(fleet.answer(query_of(got.target)))(got, writer)

    async with fake_server({"/api/v1/query": handle}) as server:
        url = server.url.replace("http://", "http://user:secret@")
        page = await PrometheusFleet(PrometheusReader(url), FleetQueries()).refresh()
        assert len(page.rows) == 5 and page.counts.total == 5
        assert len(server.received) == 5  # recorded rules?, counts, the worst, their rows
        for got in server.received:
            assert got.method == "GET"
            assert "authorization" not in got.headers and b"secret" not in got.raw
            assert got.headers.get("accept-encoding") == "identity"


def test_disallowed_host_refused() -> None:
    with pytest.raises(PrometheusError, match="not in allowed_hosts"):
        PrometheusReader("http://10.1.2.3:9090", allowed_hosts=("127.0.0.1",))
    with pytest.raises(PrometheusError, match="never contacted"):
        PrometheusReader("http://169.254.169.254")


async def test_an_engine_that_answers_more_than_asked_is_cut_to_the_limit() -> None:
    fleet = FakeFleet(2000)
    every = fleet.answer("topk(2000, x)")  # whatever is asked: every cluster, as if topk were ignored

    async def handle(got, writer):  # type: ignore[no-untyped-def]
        query = query_of(got.target)
        await json_answer(every if query.startswith("topk(") else fleet.answer(query))(got, writer)

    async with fake_server({"/api/v1/query": handle}) as server:
        page = await PrometheusFleet(PrometheusReader(server.url), FleetQueries(limit=50)).refresh()
        asked = len(server.received)
    assert len(page.rows) == 50 and page.counts.total == 2000
    assert asked <= 4 + 10  # rules probed, the two first queries, a few detail queries for 50 clusters
