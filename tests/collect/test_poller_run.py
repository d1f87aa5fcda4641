"""The poll loop itself: paced cycles handed to a callback, cancellation-safe, failures as data;
and the messages that name the source actually missing."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.snapshot_cli import nothing_reachable, run_snapshot
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.settings import NodeSettings, Settings
from tests.hostile.fakes import Handler, Received, answer, fake_server
from tests.support.clocks import StepClock
from tests.support.lab_polls import until_seen


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _unreachable() -> Settings:
    """One node whose PostgreSQL and Patroni ports are closed: every cycle ends at once, failed."""
    port = _closed_port()
    return Settings(
        nodes=(NodeSettings(name="a", host="127.0.0.1", port=port),),
        patroni={"urls": (f"http://127.0.0.1:{port}",), "timeout": 0.5},
    )


async def test_run_hands_snapshots_and_stops_on_cancel() -> None:
    settings = _unreachable()
    clock = StepClock()
    poller = Poller.from_settings(settings, clock)
    seen: list[ClusterSnapshot] = []
    three = asyncio.Event()

    async def on_snapshot(snap: ClusterSnapshot) -> None:
        seen.append(snap)
        if len(seen) >= 3:
            three.set()

    task = asyncio.create_task(poller.run(on_snapshot, lambda: 0.2))
    try:
        async with asyncio.timeout(10):
            await three.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await poller.aclose()
    assert task.cancelled()
    times = [s.taken_at for s in seen]
    assert times == sorted(times) and len(set(times)) == len(times)  # the injected clock
    assert all(s.node("a") is not None and s.node("a").error for s in seen)  # type: ignore[union-attr]
    assert any("/cluster" in e for e in seen[0].errors)
    assert poller.cycles >= 3


class _Seen:
    """The snapshots a run handed over, and an event set at each."""

    def __init__(self) -> None:
        self.snaps: list[ClusterSnapshot] = []
        self.got = asyncio.Event()

    def __call__(self, snap: ClusterSnapshot) -> None:
        self.snaps.append(snap)
        self.got.set()


async def test_a_lost_connection_wakes_the_poller_at_once() -> None:
    # A primary killed (or demoted) between two calm polls: its kept connection closed under us,
    # and the next cycle starts now, not a calm interval later.
    poller = Poller.from_settings(_unreachable(), StepClock())
    on_snapshot = _Seen()
    seen, got = on_snapshot.snaps, on_snapshot.got
    task = asyncio.create_task(poller.run(on_snapshot, lambda: 600.0))
    try:
        async with asyncio.timeout(10):
            await got.wait()
            got.clear()
            reader = poller.membership.members["a"].node
            assert reader is not None and reader.on_lost == poller.wake
            kept = object()
            reader._conn = kept
            # As asyncpg's termination listener calls it when the server closes the connection.
            reader._lost(kept)
            reader._conn = None
            await got.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await poller.aclose()
    assert len(seen) == 2


async def test_hurry_ends_a_calm_pause_when_the_cadence_got_faster() -> None:
    settings = _unreachable()
    poller = Poller.from_settings(settings, StepClock())
    pace = [600.0]  # calm: a pause far longer than the test's deadline
    seen: list[ClusterSnapshot] = []
    got = asyncio.Event()
    asked = asyncio.Event()  # the run loop looked at interval()

    def on_snapshot(snap: ClusterSnapshot) -> None:
        seen.append(snap)
        got.set()

    def interval() -> float:
        asked.set()
        return pace[0]

    task = asyncio.create_task(poller.run(on_snapshot, interval))
    try:
        async with asyncio.timeout(10):
            await got.wait()
            got.clear()
            asked.clear()
            poller.hurry()  # told, but the cadence is unchanged: the pause goes on
            # The loop looks again and, between that look and its next await, either pauses
            # again or starts a cycle (which counts itself at once): no other cycle means paused.
            await asked.wait()
            assert poller.cycles == 1 and len(seen) == 1
            pace[0] = 0.05
            poller.hurry()
            await got.wait()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await poller.aclose()
    assert len(seen) >= 2


async def test_a_primed_first_cycle_is_begun_once_and_is_the_first_run_hands_over() -> None:
    poller = Poller.from_settings(_unreachable(), StepClock())
    on_snapshot = _Seen()
    seen, got = on_snapshot.snaps, on_snapshot.got

    before = asyncio.all_tasks()
    poller.prime()  # the console, before Textual builds the screen
    poller.prime()  # a second call begins nothing more
    assert len(asyncio.all_tasks() - before) == 1  # one cycle begun, before any run()
    task: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(10):
            task = asyncio.create_task(poller.run(on_snapshot, lambda: 600.0))
            await got.wait()
        # run() handed over the primed cycle's snapshot instead of polling again first.
        assert poller.cycles == 1 and len(seen) == 1
        assert seen[0].node("a") is not None and seen[0].node("a").error  # type: ignore[union-attr]
        running = asyncio.all_tasks()
        poller.prime()  # once run() began, priming is over
        assert asyncio.all_tasks() == running and poller.cycles == 1
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await poller.aclose()


async def test_aclose_ends_a_primed_cycle_that_run_never_took() -> None:
    settings = _unreachable()
    poller = Poller.from_settings(settings, StepClock())
    before = asyncio.all_tasks()
    poller.prime()  # the console failed to start its screen: nothing will ever call run()
    primed = asyncio.all_tasks() - before
    assert len(primed) == 1
    await poller.aclose()
    assert all(t.done() for t in primed)


STATS_CSV = (Path(__file__).parent / "fixtures" / "haproxy_stats.csv").read_bytes()


async def test_haproxy_only_polls_haproxy_and_names_patroni_as_missing() -> None:
    async with fake_server({"/stats": answer(STATS_CSV, headers={"Content-Type": "text/csv"})}) as stats:
        settings = Settings(haproxy={"url": f"{stats.url}/stats"})
        poller = Poller.from_settings(settings, StepClock())
        try:
            snap = await poller.cycle()
        finally:
            await poller.aclose()
    assert snap.haproxy.error is None and snap.haproxy.servers
    assert snap.errors == ("Patroni: not configured (give --patroni URL to see members)",)
    assert not nothing_reachable(snap)


async def test_nothing_configured_names_every_source() -> None:
    poller = Poller.from_settings(Settings(), StepClock())
    try:
        snap = await poller.cycle()
    finally:
        await poller.aclose()
    assert snap.errors == ("nothing to poll: give --patroni URL, [[nodes]] in the config or --haproxy",)


def test_unreachable_haproxy_only_run_blames_haproxy(capsys: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    settings = Settings(haproxy={"url": f"http://127.0.0.1:{port}", "timeout": 0.5})
    assert run_snapshot(settings, schema=False) == 1
    err = capsys.readouterr().err
    assert f"haproxy stats http://127.0.0.1:{port}/: cannot connect" in err
    assert "is HAProxy running there?" in err
    assert "Patroni" not in err


async def test_a_leader_change_is_handed_over_without_waiting_for_slow_sources() -> None:
    """The cycle that first sees a new leader in /cluster returns at once; a slow member does not hold it."""
    state = {"leader": "a"}

    async def cluster(_got: Received, writer: asyncio.StreamWriter) -> None:
        members = [
            {"name": n, "role": "leader" if n == state["leader"] else "replica", "state": "running",
             "api_url": f"http://127.0.0.1:{server.port}/patroni"}
            for n in ("a", "b")
        ]  # fmt: skip
        body = json.dumps({"members": members}).encode()
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)

    slow = asyncio.Event()
    release = asyncio.Event()  # slow members answer only once the test has its snapshot

    async def own(_got: Received, writer: asyncio.StreamWriter) -> None:
        if slow.is_set():
            await release.wait()
        head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
        writer.write(head + b'{"role": "replica", "state": "running"}')

    async with fake_server({"/cluster": cluster, "/patroni": own}) as server:
        # /cluster every cycle (calm_interval 0): this leader change is one only /cluster shows.
        settings = Settings(patroni={"urls": (server.url,), "timeout": 3.0, "calm_interval": 0})
        poller = Poller.from_settings(settings, StepClock())
        try:
            first = await poller.cycle(budget=2.5)
            assert first.cluster.leader == "a"
            slow.set()
            state["leader"] = "b"
            loop = asyncio.get_running_loop()
            started = loop.time()
            changed = await poller.cycle(budget=2.5)
            took = loop.time() - started
            release.set()
        finally:
            release.set()
            await poller.aclose()
    assert changed.cluster.leader == "b"
    assert took < 1.0, f"the cycle waited {took:.2f}s for slow members"


async def test_a_configured_root_that_answers_unlisted_is_its_own_member() -> None:
    """A member whose Patroni runs but is not in /cluster (its DCS key lost) shows by its own name.

    A fake: a live Patroni left out of /cluster (DCS trouble) cannot be made on demand.
    """

    def own_answer(name: str) -> Handler:
        async def own(_got: Received, writer: asyncio.StreamWriter) -> None:
            body = json.dumps({"role": "replica", "state": "running", "patroni": {"name": name}})
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body.encode())

        return own

    async with (
        fake_server({"/patroni": own_answer("a")}) as alias,
        fake_server({"/patroni": own_answer("c")}) as lost,
    ):

        async def cluster(_got: Received, writer: asyncio.StreamWriter) -> None:
            api_url = f"{listed.url}/patroni"
            members = [{"name": "a", "role": "leader", "state": "running", "api_url": api_url}]
            body = json.dumps({"members": members}).encode()
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)

        async with fake_server({"/cluster": cluster, "/patroni": own_answer("a")}) as listed:
            urls = (listed.url, alias.url, lost.url)
            poller = Poller.from_settings(Settings(patroni={"urls": urls, "timeout": 2.0}), StepClock())
            seen: list[ClusterSnapshot] = []

            def named(snap: ClusterSnapshot) -> bool:
                return snap.member("c") is not None

            try:
                await until_seen(poller, named, 20, "c by its name", seen.append)
            finally:
                await poller.aclose()
    last = seen[-1]
    c = last.member("c")
    assert c is not None, [m.name for m in last.members]
    assert c.unlisted and c.reachable and c.own_state == "running"
    assert c.error is not None and c.error.startswith("configured in [patroni] urls, not listed")
    # The root answering for the listed member "a" is "a" under another name: never a member.
    assert all(m.name in ("a", "c") or m.name == f"127.0.0.1:{lost.port}" for s in seen for m in s.members)
    assert [m.name for m in last.members] == ["a", "c"]


async def test_without_cluster_the_roots_answer_for_themselves_in_the_first_cycle() -> None:
    """/cluster failing from the start (a DCS outage) still shows each root's member by its own word.

    A fake: a Patroni whose /cluster fails while /patroni answers depends on etcd's watch state.
    """

    def own_answer(name: str, role: str) -> Handler:
        async def own(_got: Received, writer: asyncio.StreamWriter) -> None:
            body = json.dumps(
                {"role": role, "state": "running", "patroni": {"name": name}, "failsafe_mode_is_active": True}
            )
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body.encode())

        return own

    async def no_dcs(_got: Received, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nDCS down")

    async with (
        fake_server({"/cluster": no_dcs, "/patroni": own_answer("a", "primary")}) as a,
        fake_server({"/cluster": no_dcs, "/patroni": own_answer("b", "replica")}) as b,
    ):
        poller = Poller.from_settings(Settings(patroni={"urls": (a.url, b.url), "timeout": 1.0}), StepClock())
        try:
            snap = await poller.cycle()
        finally:
            await poller.aclose()
    assert not snap.cluster.reachable
    assert {m.name: m.own_role for m in snap.members} == {"a": "primary", "b": "replica"}
    assert all(m.failsafe_active and not m.unlisted for m in snap.members)
