"""/cluster and each member's own /patroni every patroni.calm_interval while calm, every cycle when
restless (and /cluster at once, in the cycle a member's own read or HAProxy shows a change); a
PostgreSQL reader retried as soon as Patroni sees its node change."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pgtop_ha.collect.http import GetOnlyClient
from pgtop_ha.collect.membership import Membership, MemberSources
from pgtop_ha.collect.patroni import ClusterView, OwnView, PatroniClient
from pgtop_ha.collect.poller import Poller
from pgtop_ha.collect.postgres import BACKOFF_MAX_S, QUICK_RETRY_S, NodeReader, Target
from pgtop_ha.collect.source import Reading, Source
from pgtop_ha.models.snapshot import ClusterInfo, Member, NodeSnapshot
from pgtop_ha.models.sources import UNSETTLED_S
from pgtop_ha.settings import PostgresSettings, Settings
from tests.hostile.fakes import Received, fake_server


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def membership(calm: float, clock: Clock) -> Membership:
    settings = Settings.model_validate({"patroni": {"calm_interval": calm}})
    return Membership(settings, clock, PatroniClient(GetOnlyClient(timeout=1), 1.0), proc=Path("/proc"))


def view(state: str, leader: str = "n1") -> ClusterView:
    members = (
        Member(name="n1", role="leader", state="running", timeline=3),
        Member(name="n2", role="replica", state=state, timeline=3),
    )
    return ClusterView(info=ClusterInfo(leader=leader), members=members)


async def test_own_patroni_is_asked_every_calm_interval_and_every_cycle_when_restless() -> None:
    m = membership(5.0, Clock())
    slot = MemberSources(name="n2", api_url=None, node=None, own=None)
    assert m.own_due(slot, restless=False)  # never asked yet
    now = asyncio.get_running_loop().time()
    slot.own_started = now
    assert not m.own_due(slot, restless=False)
    assert m.own_due(slot, restless=True)
    slot.own_started = now - 4.9  # a 1 s cadence: the 5th cycle asks, not the 6th
    assert m.own_due(slot, restless=False)


async def test_zero_calm_interval_asks_every_cycle() -> None:
    m = membership(0.0, Clock())
    slot = MemberSources(name="n2", api_url=None, node=None, own=None)
    slot.own_started = asyncio.get_running_loop().time()
    assert m.own_due(slot, restless=False)


def test_a_change_in_cluster_states_is_restless_for_a_while() -> None:
    clock = Clock()
    m = membership(5.0, clock)
    m._note_changes(view("streaming"))
    m._note_changes(view("streaming"))
    assert not m.restless()
    m._note_changes(view("stopped"))
    assert m.restless()
    clock.now += timedelta(seconds=UNSETTLED_S + 1)
    assert not m.restless()
    m._note_changes(view("stopped", leader="n2"))  # a new leader is a change too
    assert m.restless()


async def test_a_new_patroni_state_ends_the_postgresql_readers_backoff() -> None:
    # After a crash test the rejoined node streamed while its reader, backing off, said "DOWN"
    # for up to BACKOFF_MAX_S: Patroni's word that its PostgreSQL changed brings the retry now.
    m = membership(5.0, Clock())
    reader = NodeReader(
        Target("n2", "127.0.0.1", 1, "postgres"), PostgresSettings(), Clock(), proc=Path("/proc")
    )
    m.members["n2"] = MemberSources(name="n2", api_url=None, node=reader, own=None)
    later = asyncio.get_running_loop().time() + BACKOFF_MAX_S
    reader._failures, reader._retry_at = 4, later
    m._apply(view("starting"))  # listed again after its key expired: a change
    assert reader._retry_at == 0.0
    reader._retry_at = later
    m._apply(view("starting"))  # the same state: the backoff stands
    assert reader._retry_at == later
    m._apply(view("running"))
    assert reader._retry_at == 0.0 and reader._failures == 4  # failing again backs off where it was


async def test_a_server_that_just_failed_is_asked_every_cycle_then_backed_off() -> None:
    # A crashed primary restarted in place served writes again a second before the reader, backing
    # off, asked it again: the write outage it timed ran long by that much.
    reader = NodeReader(
        Target("n2", "127.0.0.1", 1, "postgres"), PostgresSettings(), Clock(), proc=Path("/proc")
    )
    reader._fail("connection refused")
    assert reader._retry_at > 0.0  # never answered: backs off from the start
    reader._failures, reader.last_ok_at = 0, datetime(2026, 1, 1, tzinfo=UTC)
    for _ in range(5):
        reader._fail("connection refused")
        assert reader._retry_at == 0.0
    reader._failing_from -= QUICK_RETRY_S
    reader._fail("connection refused")
    assert reader._retry_at > asyncio.get_running_loop().time()


async def test_a_member_no_longer_listed_keeps_nothing_restless() -> None:
    # A member stopped for maintenance stays on screen (its URL configured: for good), failing
    # each read; it made every member's /patroni and every probe run each cycle for as long.
    m = membership(5.0, Clock())
    reader = NodeReader(
        Target("n2", "127.0.0.1", 1, "postgres"), PostgresSettings(), Clock(), proc=Path("/proc")
    )
    m.members["n2"] = MemberSources(name="n2", api_url=None, node=reader, own=None)
    m._apply(view("running"))
    assert reader.unsettled() and m.restless()  # listed and not answering: restless
    alone = ClusterView(info=ClusterInfo(leader="n1"), members=view("running").members[:1])
    m._apply(alone)
    assert "n2" in m.members and m.members["n2"].gone_since is not None
    assert reader.unsettled() and not m.restless()


async def test_cluster_is_asked_every_calm_interval_and_every_cycle_when_restless() -> None:
    m = membership(5.0, Clock())
    assert m.cluster_due(restless=False)  # never asked yet
    m._cluster_started = asyncio.get_running_loop().time()
    assert not m.cluster_due(restless=False)
    assert m.cluster_due(restless=True)
    m._cluster_started -= 4.9  # a 1 s cadence: the 5th cycle asks
    assert m.cluster_due(restless=False)
    zero = membership(0.0, Clock())
    zero._cluster_started = asyncio.get_running_loop().time()
    assert zero.cluster_due(restless=False)


def own_view(role: str, state: str = "running", timeline: int = 3) -> OwnView:
    return OwnView(role, state, timeline, None, None, None, None, None, None, "n2")


async def test_a_role_or_timeline_that_moved_in_a_members_own_read_is_restless_for_a_while() -> None:
    # While calm /cluster is asked every calm_interval; a promotion shows first in the node's
    # PostgreSQL (or its own /patroni), and /cluster must then be asked every cycle.
    clock = Clock()
    m = membership(5.0, clock)
    reader = NodeReader(
        Target("n2", "127.0.0.1", 1, "postgres"), PostgresSettings(), Clock(), proc=Path("/proc")
    )

    async def never() -> OwnView:
        raise AssertionError("not polled here")

    own: Source[OwnView] = Source("own", never, 1.0, clock, str)
    m.members["n2"] = MemberSources(name="n2", api_url=None, node=reader, own=own)

    def pg(in_recovery: bool, timeline: int = 3) -> None:
        reader.last_ok_at = clock.now
        reader._result = NodeSnapshot(name="n2", reachable=True, in_recovery=in_recovery, timeline=timeline)

    m.note_views()  # nothing answered yet
    pg(True)
    own._reading = Reading(own_view("replica"), None, clock.now)
    m.note_views()  # first answers: news of nothing changed
    assert not m.restless()
    m.note_views()
    assert not m.restless()
    pg(False)  # promoted: PostgreSQL says so before /cluster is asked again
    m.note_views()
    assert m.restless()
    clock.now += timedelta(seconds=UNSETTLED_S + 1)
    m.note_views()
    assert not m.restless()
    pg(False, timeline=4)
    m.note_views()
    assert m.restless()
    clock.now += timedelta(seconds=UNSETTLED_S + 1)
    m.note_views()
    own._reading = Reading(own_view("primary"), None, clock.now)  # its own /patroni
    m.note_views()
    assert m.restless()


async def test_a_calm_cluster_is_asked_again_in_the_cycle_haproxy_moves() -> None:
    """Calm, a change only /cluster shows waits for its calm read; HAProxy's routing moving asks at once."""
    state = {"leader": "a", "routed": "a"}

    async def cluster(_got: Received, writer: asyncio.StreamWriter) -> None:
        members = [
            {"name": n, "role": "leader" if n == state["leader"] else "replica", "state": "running"}
            for n in ("a", "b")
        ]
        body = json.dumps({"members": members}).encode()
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body)

    async def stats(_got: Received, writer: asyncio.StreamWriter) -> None:
        rows = "".join(f"pg_writer,{n},{'UP' if n == state['routed'] else 'DOWN'},\n" for n in ("a", "b"))
        body = ("# pxname,svname,status,\n" + rows).encode()
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body)

    def asked() -> int:
        return sum(r.target.startswith("/cluster") for r in server.received)

    async with fake_server({"/cluster": cluster, "/stats": stats}) as server:
        settings = Settings(
            patroni={"urls": (server.url,), "timeout": 3.0, "calm_interval": 60},
            haproxy={"url": f"{server.url}/stats"},
        )
        poller = Poller.from_settings(settings, Clock())
        try:
            first = await poller.cycle(budget=2.5)
            assert first.cluster.leader == "a" and asked() == 1
            state["leader"] = "b"  # only Patroni knows, for now
            calm = await poller.cycle(budget=2.5)
            assert calm.cluster.leader == "a" and asked() == 1  # not asked: calm for 60 s
            state["routed"] = "b"  # HAProxy's check follows Patroni
            moved = await poller.cycle(budget=2.5)
        finally:
            await poller.aclose()
    assert asked() == 2
    assert moved.cluster.leader == "b"  # asked in the very cycle HAProxy showed it
