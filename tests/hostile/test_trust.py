"""Trust boundaries against hostile servers: what a /cluster answer can make the console do.

A fake Patroni (tests/hostile/fakes.py) and a fake PostgreSQL that asks for the password in
clear text (tests/hostile/pg_server.py) record everything they receive; each test asserts the
bounded outcome: how many requests and connections, the message shown, and that no secret left.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from pgtop_ha import pgguard
from pgtop_ha.actions.audit import AuditLog
from pgtop_ha.actions.operator import Actions
from pgtop_ha.actions.patroni_writer import PatroniWriter
from pgtop_ha.actions.reset_scopes import ResetScope, ResetTarget
from pgtop_ha.actions.results import ActionResult
from pgtop_ha.actions.stats_reset import StatsResetter
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.postgres import NodeReader, Target
from pgtop_ha.collect.snapshot_cli import run_snapshot
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.settings import NodeSettings, Settings, load_settings
from tests.hostile.fakes import FakeServer, Handler, Received, fake_server, json_answer
from tests.hostile.pg_server import MD5, fake_postgres
from tests.support.clocks import StepClock

SECRET = "s3cret-pw"
OWN = json.dumps({"role": "replica", "state": "running", "patroni": {"version": "4.0.0"}}).encode()


@pytest.fixture
def pgpassword(monkeypatch: pytest.MonkeyPatch) -> str:
    """PGPASSWORD set, as DBAs often have it: the secret a hostile server wants."""
    monkeypatch.setenv("PGPASSWORD", SECRET)
    monkeypatch.delenv("PGPASSFILE", raising=False)
    return SECRET


@pytest.fixture
def dead_ports() -> Iterator[list[int]]:
    """Ports bound but not listening: connections are refused and nobody else can take them."""
    socks = []
    for _ in range(40):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        socks.append(sock)
    try:
        yield [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def cluster_doc(members: list[dict[str, Any]]) -> bytes:
    return json.dumps({"scope": "hostile", "members": members}).encode()


def patroni_routes(cluster: Handler) -> dict[str, Handler]:
    return {
        "/cluster": cluster,
        "/patroni": json_answer(OWN),
        "/history": json_answer(b"[]"),
        "/config": json_answer(b"{}"),
    }


def own_gets(server: FakeServer) -> int:
    return sum(1 for r in server.received if r.target == "/patroni")


async def one_cycle(settings: Settings) -> tuple[Poller, ClusterSnapshot]:
    poller = Poller.from_settings(settings, StepClock())
    return poller, await poller.cycle()


# -- bounded: the member cap and discovery roots --------------------------------------------------


async def test_1500_members_poll_at_most_max_members(pgpassword: str) -> None:
    async with fake_postgres() as pg:
        members = [
            {
                "name": f"m{i}",
                "role": "leader" if i == 1499 else "replica",
                "state": "running",
                "host": "127.0.0.1",
                "port": pg.port,
                "api_url": "",  # set below, once the fake's port is known
            }
            for i in range(1500)
        ]
        body: dict[str, bytes] = {}

        async def cluster(got: Received, writer: asyncio.StreamWriter) -> None:
            await json_answer(body["cluster"])(got, writer)

        async with fake_server(patroni_routes(cluster)) as patroni:
            for m in members:
                m["api_url"] = f"{patroni.url}/patroni"
            body["cluster"] = cluster_doc(members)
            poller, snap = await one_cycle(Settings(patroni={"urls": [patroni.url]}))
            try:
                gets_first = own_gets(patroni)
                connections_first = pg.connections
                await poller.cycle()
            finally:
                await poller.aclose()
            assert gets_first == 64
            assert connections_first == 64
            assert own_gets(patroni) <= 128  # 64 per cycle, never 1500
            assert pg.connections == 64  # each node backs off after its failure
    assert len(snap.members) == 64 and len(snap.nodes) == 64
    assert snap.cluster.leader == "m1499"  # the leader is kept wherever it is listed
    assert snap.member("m1499") is not None
    assert any("lists 1500 members; polling 64 (max_members)" in e for e in snap.errors)
    assert pg.passwords == []
    assert all(n.error and "clear text" in n.error for n in snap.nodes)


async def test_max_members_is_configurable() -> None:
    members = [{"name": f"m{i}", "role": "replica", "state": "running"} for i in range(10)]
    async with fake_server(patroni_routes(json_answer(cluster_doc(members)))) as patroni:
        poller, snap = await one_cycle(Settings(patroni={"urls": [patroni.url]}, max_members=3))
        await poller.aclose()
    assert [m.name for m in snap.members] == ["m0", "m1", "m2"]
    assert any("lists 10 members; polling 3" in e for e in snap.errors)


async def test_discovery_roots_stay_bounded_when_a_member_moves_every_cycle(dead_ports: list[int]) -> None:
    served = {"n": 0}

    async def cluster(got: Received, writer: asyncio.StreamWriter) -> None:
        port = dead_ports[served["n"] % len(dead_ports)]
        served["n"] += 1
        doc = cluster_doc(
            [{"name": "wanderer", "role": "replica", "api_url": f"http://127.0.0.1:{port}/patroni"}]
        )
        await json_answer(doc)(got, writer)

    async with fake_server(patroni_routes(cluster)) as patroni:
        poller = Poller.from_settings(Settings(patroni={"urls": [patroni.url]}), StepClock())
        roots_seen: list[int] = []
        requests_per_cycle: list[int] = []
        try:
            for _ in range(30):
                before = poller.patroni.requests
                await poller.cycle()
                requests_per_cycle.append(poller.patroni.requests - before)
                roots_seen.append(len(poller.membership.candidate_roots()))
        finally:
            await poller.aclose()
    assert served["n"] >= 30
    # The configured root plus the wanderer's current one; the old ones expired.
    assert max(roots_seen) <= 2
    assert roots_seen[-1] == 2
    # /cluster, the wanderer's /patroni and (every few cycles) /history + /config.
    assert max(requests_per_cycle) <= 4


# -- hosts: metadata addresses, bad api_url shapes, allowed_hosts ---------------------------------


def test_metadata_and_link_local_addresses_are_never_contacted() -> None:
    policy = HostPolicy()
    for host in ("169.254.169.254", "fe80::1", "metadata.google.internal", "::ffff:169.254.169.254"):
        why = policy.refusal(host)
        assert why is not None and "never contacted" in why, host
    assert policy.refusal("10.0.0.5") is None
    # An allowed-hosts list can't let them in either.
    assert HostPolicy.of(["169.254.0.0/16"]).refusal("169.254.169.254") is not None


async def test_hostile_api_urls_are_shown_not_fetched(pgpassword: str) -> None:
    async with fake_server({}) as patroni:
        here = patroni.url
        members = [
            {"name": "meta-path", "api_url": "http://169.254.169.254/latest/meta-data/?x=/patroni"},
            {"name": "meta-port", "api_url": "http://169.254.169.254:80/patroni", "host": "169.254.169.254"},
            {"name": "loop-path", "api_url": f"{here}/latest/meta-data/?x=/patroni"},
            {"name": "loop-query", "api_url": f"{here}/patroni?x=1"},
            {"name": "creds", "api_url": f"http://admin:{SECRET}@127.0.0.1:{patroni.port}/patroni"},
            {"name": "ftp", "api_url": f"ftp://127.0.0.1:{patroni.port}/patroni"},
            {"name": "good", "api_url": f"{here}/patroni"},
        ]
        patroni.routes.update(patroni_routes(json_answer(cluster_doc(members))))
        poller, snap = await one_cycle(Settings(patroni={"urls": [here]}))
        slots = dict(poller.membership.members)
        await poller.aclose()
        targets = [r.target for r in patroni.received]
        heads = b"".join(r.raw for r in patroni.received)
    assert not any("meta-data" in t or "?" in t for t in targets), targets
    assert targets.count("/patroni") == 1  # only the good member's
    assert b"authorization" not in heads.lower() and SECRET.encode() not in heads
    errors = {m.name: m.error or "" for m in snap.members}
    assert "169.254.169.254 is a link-local or metadata address; never contacted" in errors["meta-port"]
    for name in ("meta-path", "loop-path", "loop-query", "creds", "ftp"):
        assert "not polled" in errors[name], (name, errors[name])
    assert snap.member("good") is not None and snap.member("good").reachable  # type: ignore[union-attr]
    # PostgreSQL at a metadata address: refused before any connection exists.
    assert slots["meta-port"].node is None
    node = snap.node("meta-port")
    assert node is not None and node.error and "never contacted" in node.error
    dumped = snap.model_dump_json()
    assert SECRET not in dumped and "admin:" not in dumped


async def test_allowed_hosts_refuse_a_member_outside(pgpassword: str) -> None:
    async with fake_postgres() as pg, fake_server({}) as other, fake_server({}) as patroni:
        # "localhost" is the same machine, but not a name on the list: refused all the same.
        members: list[dict[str, Any]] = [
            {"name": "inside", "api_url": f"{patroni.url}/patroni"},
            {
                "name": "outside",
                "api_url": f"http://localhost:{other.port}/patroni",
                "host": "127.0.0.1",
                "port": pg.port,
            },
        ]
        patroni.routes.update(patroni_routes(json_answer(cluster_doc(members))))
        settings = Settings(
            patroni={"urls": [patroni.url], "allowed_hosts": ["127.0.0.1"]},
            postgres={"allowed_hosts": ["10.9.9.0/24"]},
        )
        poller, snap = await one_cycle(settings)
        await poller.aclose()
        assert other.received == []
        assert pg.connections == 0 and pg.passwords == []
    outside = snap.member("outside")
    assert outside is not None
    assert outside.error == "localhost is not in patroni.allowed_hosts; not contacted"
    node = snap.node("outside")
    assert node is not None and node.error == "127.0.0.1 is not in postgres.allowed_hosts; not contacted"
    assert node.host == "127.0.0.1" and node.port == pg.port
    inside = snap.member("inside")
    assert inside is not None and inside.reachable


async def test_a_configured_url_outside_allowed_hosts_is_refused() -> None:
    async with fake_server(patroni_routes(json_answer(cluster_doc([])))) as patroni:
        settings = Settings(
            patroni={"urls": [patroni.url], "allowed_hosts": ["10.0.0.0/8"]},
            haproxy={"url": "http://127.0.0.1:1/stats"},
        )
        poller, snap = await one_cycle(settings)
        await poller.aclose()
        assert patroni.received == []
    assert (
        snap.errors[0] == f"patroni {patroni.url}: 127.0.0.1 is not in patroni.allowed_hosts; not contacted"
    )


# -- passwords ------------------------------------------------------------------------------------


@pytest.mark.parametrize("drip", [False, True], ids=["whole", "byte-by-byte"])
async def test_cleartext_password_request_is_refused(pgpassword: str, drip: bool) -> None:
    async with fake_postgres(drip=drip) as pg:
        reader = NodeReader(
            Target(name="n", host="127.0.0.1", port=pg.port, dbname="postgres"),
            Settings().postgres,
            StepClock(),
        )
        await reader.start()
        await reader.aclose()
        assert pg.connections == 1 and pg.startups
        assert pg.passwords == []
    view = reader.view()
    assert view.error is not None
    assert "asked for the password in clear text without TLS; not sent" in view.error
    assert "allow_cleartext_password" in view.error


async def test_cleartext_is_sent_only_when_allowed(pgpassword: str) -> None:
    # The control: the fake does get the password when the user says so.
    async with fake_postgres() as pg:
        reader = NodeReader(
            Target(name="n", host="127.0.0.1", port=pg.port, dbname="postgres"),
            Settings(postgres={"allow_cleartext_password": True}).postgres,
            StepClock(),
        )
        await reader.start()
        await reader.aclose()
        assert pg.passwords == [SECRET.encode()]
    assert reader.view().error and "authentication failed" in reader.view().error  # type: ignore[operator]


async def test_md5_is_not_cleartext(pgpassword: str) -> None:
    # MD5 never carries the password itself: the guard lets it through (allowed_hosts is the defence).
    async with fake_postgres(MD5) as pg:
        with pytest.raises(Exception, match="password authentication failed"):
            await pgguard.connect(allow_cleartext=False, host="127.0.0.1", port=pg.port, database="x")
        assert len(pg.passwords) == 1 and pg.passwords[0].startswith(b"md5")
        assert SECRET.encode() not in pg.passwords[0]


async def test_hostile_cluster_member_gets_no_password_from_the_read_path(pgpassword: str) -> None:
    async with fake_postgres() as pg:
        members = [{"name": "trap", "role": "leader", "host": "127.0.0.1", "port": pg.port}]
        async with fake_server(patroni_routes(json_answer(cluster_doc(members)))) as patroni:
            poller, snap = await one_cycle(Settings(patroni={"urls": [patroni.url]}))
            await poller.aclose()
        assert pg.connections == 1
        assert pg.passwords == []
    trap = snap.node("trap")
    assert trap is not None and trap.error and "clear text" in trap.error


# -- the write path -------------------------------------------------------------------------------


def _actions(tmp_path: Path, handler: Any, **policy: Any) -> tuple[Actions, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        response: httpx.Response = handler(request)
        return response

    client = httpx.AsyncClient(transport=httpx.MockTransport(record), auth=httpx.BasicAuth("patroni", SECRET))
    writer = PatroniWriter(("http://127.0.0.1:25420",), client)
    audit = AuditLog(tmp_path / "audit.log", cluster="hostile")
    actions = Actions(
        writer, StatsResetter(Settings()), audit, StepClock(), takeover_timeout_s=5, poll_every_s=0, **policy
    )
    return actions, seen


async def test_write_path_learns_only_well_formed_allowed_members(tmp_path: Path) -> None:
    members = [
        {
            "name": "a",
            "role": "replica",
            "state": "streaming",
            "api_url": "http://169.254.169.254:80/patroni",
        },
        {"name": "b", "role": "replica", "state": "streaming", "api_url": "http://10.0.0.7/x?/patroni"},
        {"name": "c", "role": "replica", "state": "streaming", "api_url": "http://u:p@10.0.0.8:8008/patroni"},
        {"name": "d", "role": "replica", "state": "streaming", "api_url": "http://10.6.6.6:8008/patroni"},
        {"name": "e", "role": "leader", "state": "running", "api_url": "http://127.0.0.1:25421/patroni"},
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(200, text="switched")
        return httpx.Response(200, json={"members": members})

    actions, seen = _actions(tmp_path, handler, patroni_hosts=HostPolicy.of(["127.0.0.0/8"]))
    result = await actions.switchover("old", "e")
    assert result.ok, result.message
    assert actions.writer.urls == ("http://127.0.0.1:25420", "http://127.0.0.1:25421")
    assert {r.url.host for r in seen} == {"127.0.0.1"}


async def test_resets_skip_refused_hosts_and_never_send_cleartext(tmp_path: Path, pgpassword: str) -> None:
    actions, _ = _actions(
        tmp_path, lambda r: httpx.Response(500), postgres_hosts=HostPolicy.of(["127.0.0.1"])
    )
    async with fake_postgres() as pg:
        nodes = [
            ResetTarget(name="meta", host="169.254.169.254", port=5432),
            ResetTarget(name="far", host="10.1.1.1", port=5432),
            ResetTarget(name="trap", host="127.0.0.1", port=pg.port),
        ]
        result = await actions.reset_stats(ResetScope(kind="archiver"), nodes)
        assert pg.connections == 1 and pg.passwords == []
    by_node = {n.node: n for n in result.nodes}
    assert not result.ok
    assert "never contacted" in by_node["meta"].message
    assert (
        by_node["far"].message
        == "far (10.1.1.1:5432): 10.1.1.1 is not in postgres.allowed_hosts; not contacted"
    )
    assert "clear text" in by_node["trap"].message


# -- secrets in URLs ------------------------------------------------------------------------------


async def test_url_credentials_never_reach_the_snapshot(pgpassword: str) -> None:
    dead = f"http://admin:{SECRET}@127.0.0.1:1"
    async with fake_server({}) as patroni:
        members = [
            {
                "name": "m1",
                "role": "leader",
                "api_url": f"http://admin:{SECRET}@127.0.0.1:{patroni.port}/patroni",
            },
            {"name": "m2", "role": "replica", "api_url": f"http://127.0.0.1:{patroni.port}/patroni"},
        ]
        patroni.routes.update(patroni_routes(json_answer(cluster_doc(members))))
        discovered = Settings(
            patroni={"urls": [f"http://admin:{SECRET}@127.0.0.1:{patroni.port}"]},
            haproxy={"url": f"{dead}/stats"},
        )
        poller, snap = await one_cycle(discovered)
        await poller.aclose()
        assert patroni.received and all("authorization" not in r.headers for r in patroni.received)
        # A configured node whose REST URL carries credentials and does not answer.
        static = Settings(nodes=(NodeSettings(name="n1", host="127.0.0.1", port=1, patroni_url=dead),))
        poller, snap_static = await one_cycle(static)
        await poller.aclose()
    for taken in (snap, snap_static):
        assert SECRET not in taken.model_dump_json()
    m1 = snap.member("m1")
    assert m1 is not None and m1.api_url == f"http://***@127.0.0.1:{patroni.port}/patroni"
    assert m1.error and "carries credentials" in m1.error
    assert snap.haproxy.error and "http://***@127.0.0.1:1/stats" in snap.haproxy.error
    n1 = snap_static.member("n1")
    assert n1 is not None and n1.api_url == "http://***@127.0.0.1:1/patroni"
    assert n1.error and "http://***@127.0.0.1:1/patroni" in n1.error


def test_url_credentials_never_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://admin:{SECRET}@127.0.0.1:1"
    settings = Settings(patroni={"urls": [dead], "timeout": 0.5}, haproxy={"url": f"{dead}/stats"})
    assert run_snapshot(settings, schema=False) == 1
    out = capsys.readouterr()
    assert SECRET not in out.out and SECRET not in out.err
    assert "nothing was reachable" in out.err


def test_url_credentials_never_in_config_errors() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(cli={"patroni": {"urls": [f"ftp://admin:{SECRET}@h:8008"]}}, environ={})
    assert SECRET not in str(caught.value)


def test_audit_log_is_private_and_redacted(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    old = os.umask(0)
    try:
        log = AuditLog(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    log.record(
        ActionResult(
            action="switchover",
            target=f"http://admin:{SECRET}@h:8008",
            ok=False,
            message=f"no Patroni member reachable: http://admin:{SECRET}@h:8008: refused",
            started_at=datetime(2025, 1, 1, tzinfo=UTC),
            duration_s=0.1,
        )
    )
    text = path.read_text()
    assert SECRET not in text and "***@h:8008" in text
    # An existing log readable by others is tightened.
    wide = tmp_path / "wide.log"
    wide.write_text("")
    wide.chmod(0o644)
    AuditLog(wide)
    assert stat.S_IMODE(wide.stat().st_mode) == 0o600
