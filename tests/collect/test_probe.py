"""Client probes without a cluster: runs of errors, outages, member lookup, settings, a refused port."""

from __future__ import annotations

import asyncio
import socket
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pgtop_ha.actions.write_probe import build_write_probe, write_sql
from pgtop_ha.cli import _parser, cli_overrides
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.probe import MAX_IN_FLIGHT, Answer, ProbeRunner, read_runner
from pgtop_ha.errors import ConfigError
from pgtop_ha.lab.configs import console_config
from pgtop_ha.lab.layout import Layout
from pgtop_ha.models.probe import ProbeRun, answered_label, member_at, step
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import ProbeEndpoint, Settings
from tests.hostile.pg_server import fake_postgres

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_run_of_errors_keeps_its_first_text_and_ends_in_an_outage() -> None:
    run = step(ProbeRun(), at(0), None, "pg1")
    run = step(run, at(1), "refused", None)
    run = step(run, at(2), "read-only", None)
    run = step(run, at(3), "timeout", None)
    assert (run.errors, run.first_error, run.first_error_at, run.last_ok_at) == (3, "refused", at(1), at(0))
    run = step(run, at(4.5), None, "pg2")
    assert run.errors == 0 and run.first_error is None and run.last_ok_at == at(4.5)
    (outage,) = run.outages
    assert (outage.started_at, outage.ended_at, outage.duration_s) == (at(1), at(4.5), 3.5)
    assert (outage.member, outage.failures) == ("pg2", 3)


def test_successes_make_no_outage() -> None:
    run = ProbeRun()
    for i in range(5):
        run = step(run, at(i), None, "pg1")
    assert run.outages == () and run.errors == 0


def test_member_at_matches_host_and_port_then_port_alone() -> None:
    members = (("pg1", "10.0.0.1", 5432), ("pg2", "10.0.0.2", 5432), ("pg3", "db3", 5433))
    assert member_at(members, "10.0.0.2", 5432) == "pg2"
    assert member_at(members, "10.0.0.9", 5432) is None  # ambiguous port, unknown address
    assert member_at(members, "192.168.0.3", 5433) == "pg3"  # a host name: the port tells
    assert member_at(members, None, None) is None
    assert answered_label(None, "10.0.0.9", 5432) == "10.0.0.9:5432"
    assert answered_label("pg1", "10.0.0.1", 5432) == "pg1"


def test_settings_refuse_a_table_that_is_not_an_identifier() -> None:
    with pytest.raises(ValueError, match="not a table name"):
        Settings.model_validate({"probes": {"write_table": "t; drop table x"}})
    ok = Settings.model_validate({"probes": {"write_table": "public.probe_w"}})
    assert ok.probes.write_table == "public.probe_w"
    assert "insert into public.probe_w default values" in write_sql("public.probe_w")
    with pytest.raises(ValueError, match="unique"):
        Settings.model_validate(
            {
                "probes": {
                    "endpoints": [
                        {"name": "a", "host": "h", "port": 1},
                        {"name": "a", "host": "h", "port": 2},
                    ]
                }
            }
        )


def test_probe_writes_flag_sets_the_table() -> None:
    args = _parser().parse_args(["--probe-writes", "probe_w"])
    assert cli_overrides(args)["probes"] == {"write_table": "probe_w"}


def test_lab_console_config_probes_the_haproxy_ports(tmp_path: Path) -> None:
    layout = Layout(25400, tmp_path)
    settings = Settings.model_validate(tomllib.loads(console_config(layout)))
    found = {(e.name, e.kind, e.port) for e in settings.probes.endpoints}
    assert found == {("writer", "writer", layout.writer_port), ("reader", "reader", layout.reader_port)}


def test_write_probe_needs_a_writer_endpoint() -> None:
    settings = Settings.model_validate({"probes": {"write_table": "probe_w"}})
    with pytest.raises(ConfigError, match="writer endpoint"):
        build_write_probe(settings, lambda: T0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again: nothing listens there


async def test_a_refused_port_is_a_one_line_error_and_the_cycle_goes_on() -> None:
    port = _free_port()
    settings = Settings.model_validate(
        {
            "probes": {"endpoints": [{"name": "dead", "host": "127.0.0.1", "port": port}], "timeout": 1},
            "nodes": [{"name": "pg1", "host": "127.0.0.1", "port": _free_port()}],
        }
    )
    poller = Poller.from_settings(settings)
    try:
        first = await poller.cycle(budget=3)
        second = await poller.cycle(budget=3)
    finally:
        await poller.aclose()
    (probe,) = second.probes
    assert probe.endpoint == "dead" and not probe.ok and probe.errors == 2
    assert probe.error is not None and "\n" not in probe.error and f"127.0.0.1:{port}" in probe.error
    assert probe.first_error == first.probes[0].error
    assert "probes" in ClusterSnapshot.model_json_schema()["properties"]
    assert second.model_dump(mode="json")["probes"][0]["errors"] == 2


async def test_a_host_outside_allowed_hosts_is_never_contacted() -> None:
    endpoint = ProbeEndpoint(name="far", host="10.9.9.9", port=5432)
    settings = Settings.model_validate({"postgres": {"allowed_hosts": ["127.0.0.0/8"]}})
    runner = read_runner(endpoint, settings.postgres, 1.0, lambda: T0, "10.9.9.9 is not allowed")
    assert runner.start() is None and runner.attempts == 0
    probe = runner.probe()
    assert not probe.ok and probe.error == "10.9.9.9 is not allowed"


async def test_a_hung_attempt_does_not_blind_the_probe() -> None:
    # A connect HAProxy holds while it retries a server going down hung the one probe for its
    # whole time limit, and the write outage it measured ran seconds past the client's.
    now = [T0]
    gates: list[asyncio.Event] = []
    outcomes: list[bool] = []
    arrived = asyncio.Event()

    async def attempt() -> Answer:
        gate = asyncio.Event()
        gates.append(gate)
        arrived.set()
        await gate.wait()
        if not outcomes.pop(0):
            raise OSError("late")
        return Answer(addr="127.0.0.1", port=1, in_recovery=False, latency_s=0.01)

    runner = ProbeRunner("w", "writer", "127.0.0.1", 1, attempt, 5.0, lambda: now[0])
    tasks = []
    for i in range(MAX_IN_FLIGHT + 1):
        now[0] = T0 + timedelta(seconds=i)
        task = runner.start()
        assert task is not None
        tasks.append(task)
        if i < MAX_IN_FLIGHT:  # a new attempt: wait until it reached its gate
            await asyncio.wait_for(arrived.wait(), 5)
            arrived.clear()
    assert len(set(tasks)) == MAX_IN_FLIGHT and len(gates) == MAX_IN_FLIGHT  # bounded
    assert runner.probe().slow_s is not None
    # The newest answers first; the oldest fails afterwards: a newer attempt already told.
    outcomes.extend([True, False])
    gates[-1].set()
    await tasks[MAX_IN_FLIGHT - 1]
    gates[0].set()
    await tasks[0]
    probe = runner.probe()
    assert probe.ok and probe.errors == 0 and probe.last_ok_at is not None
    outcomes.append(False)
    gates[1].set()
    await tasks[1]
    assert runner.probe().ok  # older still: it counts for nothing
    await runner.aclose()


async def test_a_calm_probe_runs_every_calm_interval_and_every_cycle_while_unsettled() -> None:
    from pgtop_ha.collect.probe import Answer
    from pgtop_ha.models.sources import UNSETTLED_S

    now = [T0]
    failing = [False]
    port = [5432]

    async def attempt() -> Answer:
        if failing[0]:
            raise OSError("refused")
        return Answer("127.0.0.1", port[0], False, 0.001)

    runner = ProbeRunner("w", "writer", "127.0.0.1", 1, attempt, 1.0, lambda: now[0], calm_interval=5.0)
    runner.locate = lambda _addr, p: {5432: "pg1", 5433: "pg2"}.get(p or 0)

    async def cycle(second: float) -> bool:
        now[0] = at(second)
        task = runner.start()
        if task is not None:
            await task
        return task is not None

    assert [await cycle(s) for s in (0, 1, 2, 3, 4, 5, 6)] == [True, False, False, False, False, True, False]
    failing[0] = True
    assert await cycle(10) and await cycle(11) and runner.probe().errors == 2  # failing: every cycle
    failing[0] = False
    assert await cycle(12) and runner.probe().ok
    # Within UNSETTLED_S of the last error: still every cycle; then calm again.
    assert await cycle(13) and await cycle(11 + UNSETTLED_S - 1)
    assert not await cycle(11 + UNSETTLED_S + 1)
    port[0] = 5433  # the writer port now answers from another member: a failover
    assert await cycle(11 + UNSETTLED_S + 5) and await cycle(11 + UNSETTLED_S + 6)
    runner.restless = lambda: True
    assert await cycle(200) and await cycle(201)
    runner.restless = lambda: False
    assert not await cycle(202)


def test_calm_interval_is_a_setting_and_zero_means_every_cycle() -> None:
    assert Settings().probes.calm_interval == 15.0
    assert Settings.model_validate({"probes": {"calm_interval": 0}}).probes.calm_interval == 0
    with pytest.raises(ValueError, match="calm_interval"):
        Settings.model_validate({"probes": {"calm_interval": -1}})


async def test_a_member_learnt_after_the_first_probe_is_not_a_routing_change() -> None:
    from pgtop_ha.collect.probe import Answer

    now = [T0]

    async def attempt() -> Answer:
        return Answer("127.0.0.1", 5432, False, 0.001)

    runner = ProbeRunner("w", "writer", "127.0.0.1", 1, attempt, 1.0, lambda: now[0], calm_interval=5.0)
    known: dict[int, str] = {}  # the poller has no member list before its first cycle
    runner.locate = lambda _addr, p: known.get(p or 0)
    ran = []
    for second in range(8):
        now[0] = at(second)
        if second == 1:
            known[5432] = "pg1"
        task = runner.start()
        if task is not None:
            await task
        ran.append(task is not None)
    assert ran == [True, False, False, False, False, True, False, False]


async def test_a_node_not_answering_makes_calm_probes_run_every_cycle() -> None:
    settings = Settings.model_validate(
        {
            "probes": {"endpoints": [{"name": "p", "host": "127.0.0.1", "port": _free_port()}], "timeout": 1},
            "nodes": [{"name": "pg1", "host": "127.0.0.1", "port": _free_port()}],
        }
    )
    poller = Poller.from_settings(settings)
    try:
        await poller.cycle(budget=3)
        (runner,) = poller._probes
        assert runner.restless()  # pg1 refuses connections: every cycle, whatever calm_interval says
    finally:
        await poller.aclose()


async def test_a_pooler_probe_sends_no_session_settings_a_stock_pgbouncer_would_refuse() -> None:
    # pgBouncer refuses startup parameters it does not know; a writer port (HAProxy in TCP mode,
    # PostgreSQL behind it) gets the read-only session the node readers use.
    async with fake_postgres() as server:
        for kind in ("pooler", "writer"):
            endpoint = ProbeEndpoint(name=kind, host="127.0.0.1", port=server.port, kind=kind)
            runner = read_runner(endpoint, Settings().postgres, 2.0, lambda: T0, None)
            task = runner.start()
            assert task is not None
            await task
    pooler, writer = server.startups
    assert {k for k in pooler if k not in ("user", "database", "client_encoding")} == {"application_name"}
    assert writer["default_transaction_read_only"] == "on" and "statement_timeout" in writer


async def test_haproxy_or_a_pooler_not_answering_makes_calm_probes_run_every_cycle(tmp_path: Path) -> None:
    # Patroni calm, no node down: HAProxy's stats socket gone, or a pooler's admin console
    # refusing, is what the probes must confirm from the application's side at once.
    endpoint = {"name": "p", "host": "127.0.0.1", "port": _free_port()}
    cases: dict[str, dict[str, object]] = {
        "haproxy": {"haproxy": {"socket": str(tmp_path / "no-haproxy.sock")}},
        "pgbouncer": {"pgbouncer": [{"name": "b", "host": "127.0.0.1", "port": _free_port()}]},
        "calm": {},
    }
    seen = {}
    for name, extra in cases.items():
        settings = Settings.model_validate({"probes": {"endpoints": [endpoint], "timeout": 1}, **extra})
        poller = Poller.from_settings(settings)
        try:
            await poller.cycle(budget=3)
            runner = poller._probes[0]  # a configured pgBouncer is probed too: they share the hook
            seen[name] = runner.restless()
        finally:
            await poller.aclose()
    assert seen == {"haproxy": True, "pgbouncer": True, "calm": False}


async def test_a_routing_change_in_haproxy_makes_calm_probes_run_every_cycle(tmp_path: Path) -> None:
    # A real HAProxy changes a server's status only when a node or a check fails (which makes the
    # cycle restless anyway) or through an admin socket the lab does not open: the stats socket
    # here is a stand-in that answers what the test says, to see the routing change alone.
    header = "# pxname,svname,scur,stot,status,lastchg,\n"
    status = {"node1": "UP", "node2": "DOWN"}
    asked = [0]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        asked[0] += 1  # sessions counted anew each time: counters are not routing
        rows = "".join(f"pg_writer,{name},0,{asked[0]},{st},5,\n" for name, st in status.items())
        writer.write((header + rows).encode())
        await writer.drain()
        writer.close()

    sock = tmp_path / "stats.sock"
    server = await asyncio.start_unix_server(serve, str(sock))
    endpoint = {"name": "p", "host": "127.0.0.1", "port": _free_port()}
    settings = Settings.model_validate(
        {"probes": {"endpoints": [endpoint], "timeout": 1}, "haproxy": {"socket": str(sock)}}
    )
    poller = Poller.from_settings(settings)
    runner = poller._probes[0]
    try:
        for _ in range(2):  # the same routing twice: calm
            snap = await poller.cycle(budget=3)
            assert snap.haproxy.error is None
        assert not runner.restless()
        status.update(node1="DOWN", node2="UP")  # the writer moved
        snap = await poller.cycle(budget=3)
        assert {s.server: s.status for s in snap.haproxy.servers} == status
        assert runner.restless()
    finally:
        await poller.aclose()
        server.close()
