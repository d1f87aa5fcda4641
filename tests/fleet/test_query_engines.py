"""Any engine that speaks Prometheus's query API: a base path, basic or bearer auth from a file, TLS
with a CA, and the partial answers Thanos and VictoriaMetrics send, each as their docs show it.

Fakes: these engines are not on this machine; the answers are those engines' shapes around the
fleet's own queries (tests/fleet/synth.py).
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from pgtop_ha.collect.fleet_queries import FleetQueries
from pgtop_ha.collect.fleet_source import PrometheusFleet
from pgtop_ha.errors import ConfigError, UserError
from pgtop_ha.fleet_cli import match_of, reader_of
from pgtop_ha.settings import load_settings
from tests.fleet.synth import FakeFleet, query_of
from tests.hostile.fakes import Received, fake_server, json_answer
from tests.support.pki import PKI

FLEET = FakeFleet(12)


def _engine(prefix: str, seen: list[Received], **envelope: Any):  # type: ignore[no-untyped-def]
    async def handle(got: Received, writer):  # type: ignore[no-untyped-def]
        seen.append(got)
        if not got.target.startswith(f"{prefix}/api/v1/query?"):
            await json_answer(b'{"status":"error","error":"not found"}', "404 Not Found")(got, writer)
            return
        await json_answer(FLEET.answer(query_of(got.target), **envelope))(got, writer)

    return handle


def _settings(tmp_path: Path, url: str, **fleet: object) -> Any:
    lines = ["[fleet]", f'prometheus = "{url}"']
    lines += [f'{k} = "{v}"' for k, v in fleet.items()]
    config = tmp_path / "fleet.toml"
    config.write_text("\n".join(lines) + "\n")
    return load_settings(config, {})


@pytest.mark.parametrize(
    ("engine", "prefix", "envelope", "warned"),
    [
        ("Prometheus", "", {}, None),
        ("Mimir", "/prometheus", {"infos": ["PromQL info: metric might not be a counter"]}, None),
        ("Thanos", "", {"warnings": ["partial response: store 10.0.0.7:10901 unreachable"]}, "store"),
        ("VictoriaMetrics cluster", "/select/0/prometheus", {"isPartial": True}, "isPartial"),
    ],
)
async def test_each_engine_with_its_base_path_and_its_partial_answers(
    tmp_path: Path, engine: str, prefix: str, envelope: dict[str, Any], warned: str | None
) -> None:
    seen: list[Received] = []
    async with fake_server({"/": _engine(prefix, seen, **envelope)}) as server:
        settings = _settings(tmp_path, f"{server.url}{prefix}")
        source = PrometheusFleet(reader_of(settings, f"{server.url}{prefix}"), FleetQueries())
        page = await source.refresh()
        await source.aclose()
    assert page.counts.total == 12 and len(page.rows) == 12, engine
    assert all(got.target.startswith(f"{prefix}/api/v1/query?") for got in seen)
    if warned is None:
        assert page.warnings == ()
    else:
        assert len(page.warnings) == 1 and warned in page.warnings[0]


@pytest.mark.parametrize(
    ("fleet", "header"),
    [
        ({"user": "reader", "password_file": "pw"}, "Basic cmVhZGVyOnMzY3JldC1wdw=="),
        ({"bearer_token_file": "pw"}, "Bearer s3cret-pw"),
    ],
)
async def test_basic_or_bearer_auth_from_a_file_only_to_the_query_api(
    tmp_path: Path, fleet: dict[str, str], header: str
) -> None:
    (tmp_path / "pw").write_text("s3cret-pw\n")
    given = {k: str(tmp_path / v) if k.endswith("_file") else v for k, v in fleet.items()}
    seen: list[Received] = []
    async with fake_server({"/": _engine("", seen)}) as server:
        settings = _settings(tmp_path, server.url, **given)
        source = PrometheusFleet(reader_of(settings, server.url), FleetQueries())
        await source.refresh()

        # An answer cannot send the login elsewhere: another origin gets none.
        async def record(got: Received, writer):  # type: ignore[no-untyped-def]
            seen.append(got)
            await json_answer(b"{}")(got, writer)

        async with fake_server({"/": record}) as other:
            await source.reader._client.get(f"{other.url}/api/v1/query?query=up")
        await source.aclose()
    assert [got.headers.get("authorization") for got in seen] == [header] * 5 + [None]


def test_auth_settings_fail_closed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="both basic auth"):
        _settings(tmp_path, "http://127.0.0.1:9", user="u", password_file="p", bearer_token_file="t")
    with pytest.raises(ConfigError, match="user is set without password_file"):
        _settings(tmp_path, "http://127.0.0.1:9", user="u")
    settings = _settings(tmp_path, "http://127.0.0.1:9", bearer_token_file=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"fleet\.bearer_token_file .*: No such file"):
        reader_of(settings, "http://127.0.0.1:9")


async def test_tls_with_the_ca_file(tmp_path: Path, pki: PKI) -> None:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(pki.server_cert), str(pki.server_key))
    seen: list[Received] = []
    async with fake_server({"/": _engine("", seen)}, tls=ctx) as server:
        url = server.url.replace("http://", "https://")
        trusted = PrometheusFleet(reader_of(_settings(tmp_path, url, ca_file=pki.ca), url), FleetQueries())
        assert (await trusted.refresh()).counts.total == 12
        await trusted.aclose()
        system = PrometheusFleet(reader_of(_settings(tmp_path, url), url), FleetQueries())
        with pytest.raises(Exception, match="certificate"):
            await system.refresh()
        await system.aclose()


def test_match_is_matchers_or_one_line() -> None:
    assert match_of('{env="prod", team=~"db.*"}') == 'env="prod", team=~"db.*"'
    assert match_of(None) == ""
    for bad in ("{}", '{env="prod}', "{a}{b}", "x\ny"):
        with pytest.raises(UserError, match="give label matchers"):
            match_of(bad)
