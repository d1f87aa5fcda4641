"""HAProxy servers not named as their members: joined by map or address, else said, never a false alarm."""

from __future__ import annotations

import pytest

from pgtop_ha.engines.timeline import Timeline
from pgtop_ha.judge.checks import disagreements, writes_ok
from pgtop_ha.judge.problems import cluster_problems, member_problems
from pgtop_ha.models.haproxy import DEFAULT_POOLS, Pools, routes
from pgtop_ha.models.probe import member_at
from pgtop_ha.models.servers import joined, known_names, member_of, split_addr, unjoined
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from tests.models.builders import feed, healthy, t, writers
from tests.models.test_stopwatch import _failover as failover
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()
NAMES = ("node1", "node2", "node3")
T = SETTINGS.thresholds


def example_name(port: int) -> str:
    """How Patroni's own example haproxy.cfg names a server."""
    return f"postgresql_127.0.0.1_{port}"


def as_patroni_example(snap: ClusterSnapshot, *, addresses: bool) -> ClusterSnapshot:
    """``snap`` with HAProxy's servers named as in Patroni's example config (addr shown or not)."""
    ports = {m.name: m.port for m in snap.members}
    servers = tuple(
        s.model_copy(
            update={
                "server": example_name(ports[s.server] or 0),
                "addr": f"127.0.0.1:{ports[s.server]}" if addresses else None,
            }
        )
        for s in snap.haproxy.servers
    )
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})


def join(snap: ClusterSnapshot, mapped: dict[str, str] | None = None) -> ClusterSnapshot:
    """What the poller does each cycle: the servers joined to the snapshot's members."""
    members = tuple((m.name, m.host, m.port) for m in snap.members)

    def locate(host: str | None, port: int | None) -> str | None:
        return member_at(members, host, port)

    names = {m.name for m in snap.members}
    servers = joined(snap.haproxy.servers, names, mapped or {}, locate)
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("10.0.0.11:5432", ("10.0.0.11", 5432)),
        ("[::1]:5432", ("::1", 5432)),
        ("db1.example.com:6432", ("db1.example.com", 6432)),
        ("unix", (None, None)),
        ("", (None, None)),
        (None, (None, None)),
        ("10.0.0.11:54x2", ("10.0.0.11", None)),
        ("10.0.0.11:9999999999999999999", ("10.0.0.11", None)),
    ],
)
def test_addr_cells(addr: str | None, expected: tuple[str | None, int | None]) -> None:
    assert split_addr(addr) == expected


def test_named_as_members_nothing_is_copied() -> None:
    snap = healthy()
    assert join(snap).haproxy.servers is snap.haproxy.servers
    assert all(s.member is None for s in join(snap).haproxy.servers)


def test_joined_by_address_routes_like_member_names() -> None:
    snap = join(as_patroni_example(healthy(), addresses=True))
    assert {member_of(s) for s in snap.haproxy.servers} == set(NAMES)
    assert sorted(routes(snap, POOLS, "writer")) == list(NAMES)
    assert writes_ok(snap, POOLS) is True
    assert disagreements(snap, POOLS) == []
    assert cluster_problems(snap, T, POOLS, snap.taken_at) == []


def test_joined_by_the_users_map_before_anything_else() -> None:
    named = as_patroni_example(healthy(), addresses=False)
    mapped = {example_name(25410 + i): name for i, name in enumerate(NAMES)}
    snap = join(named, mapped)
    assert writes_ok(snap, POOLS) is True
    # The map wins over the address (the user said so).
    wrong = join(as_patroni_example(healthy(), addresses=True), {example_name(25410): "node2"})
    assert next(s.member for s in wrong.haproxy.servers if s.server == example_name(25410)) == "node2"


def test_not_joined_is_said_once_and_is_no_false_alarm() -> None:
    snap = join(as_patroni_example(healthy(), addresses=False))
    problems = cluster_problems(snap, T, POOLS, snap.taken_at)
    assert [p.key for p in problems] == ["haproxy unjoined"]
    (problem,) = problems
    assert problem.text.startswith("HAProxy: 3 servers are no Patroni member")
    assert "[haproxy] members" in problem.text and "stats show-legends" in problem.text
    # Before: "HAProxy writer pool routes to postgresql_…, not the leader node1" on a healthy cluster.
    assert disagreements(snap, POOLS) == []
    assert writes_ok(snap, POOLS) is None  # where writes go is not known: not "down"
    assert unjoined(snap.haproxy.servers, known_names(snap)) == [
        example_name(p) for p in (25410, 25411, 25412)
    ]


def test_not_said_before_patroni_names_its_members() -> None:
    snap = join(as_patroni_example(healthy(), addresses=False))
    early = snap.model_copy(update={"members": ()})
    assert all(p.key != "haproxy unjoined" for p in cluster_problems(early, T, POOLS, early.taken_at))


def test_joined_writer_on_a_replica_is_still_caught() -> None:
    snap = join(as_patroni_example(writers(healthy(), "node1", "node3"), addresses=True))
    assert writes_ok(snap, POOLS) is False
    wrong = [c.text for c in disagreements(snap, POOLS) if c.key == "writer:wrong"]
    assert wrong == ["HAProxy writer pool routes to node3, not the leader node1"]
    assert any(
        "writes to a non-leader" in p.text for p in member_problems(snap, "node3", T, POOLS, snap.taken_at)
    )


def test_stopwatch_measures_writes_with_servers_named_otherwise() -> None:
    # test_stopwatch's failover, with HAProxy's servers named as in Patroni's example config.
    tl = Timeline()
    feed(tl, [join(as_patroni_example(snap, addresses=True)) for snap in failover()])
    (r,) = tl.failovers()
    assert (r.write_outage_from, r.write_outage_to, r.write_outage_s) == (t(1), t(8), 7.0)
    # Not joined: where writes went is not known, so no outage is made up (nor ended).
    tl = Timeline()
    feed(tl, [join(as_patroni_example(snap, addresses=False)) for snap in failover()])
    (r,) = tl.failovers()
    assert r.write_outage_s is None and r.new_leader == "node2"


def test_server_rows_keep_their_own_names_in_events_label() -> None:
    from pgtop_ha.engines.events import facts

    snap = join(as_patroni_example(healthy(), addresses=True))
    found = [f for k, f in facts(snap).items() if k[0] == "haproxy" and len(k) == 3]
    assert {f.node for f in found} == set(NAMES)
    assert all("postgresql_127.0.0.1_" in f.label for f in found)


def test_hostile_addr_is_no_crash() -> None:
    srv = HAProxyServer(proxy="pg_writer", server="x", addr="\x1b[2J:5432")
    assert split_addr(srv.addr)[1] == 5432
    assert join(healthy()).haproxy.servers  # unchanged


def backends_named(snap: ClusterSnapshot, names: dict[str, str]) -> ClusterSnapshot:
    """``snap`` with HAProxy's backends renamed (old name to new)."""
    servers = tuple(s.model_copy(update={"proxy": names.get(s.proxy, s.proxy)}) for s in snap.haproxy.servers)
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})


def test_a_backend_of_members_that_is_no_pool_is_said() -> None:
    # Patroni's example config has one pool, named after the scope: `listen batman`.
    snap = backends_named(healthy(), {"pg_writer": "batman"})
    problems = cluster_problems(snap, T, POOLS, snap.taken_at)
    (problem,) = [p for p in problems if p.key == "haproxy pools"]
    assert problem.text.startswith("HAProxy backend batman is no writer or reader pool")
    assert "[haproxy] writer_backends" in problem.text
    assert writes_ok(snap, POOLS) is None
    # Named in the settings, it is a pool again, and nothing is said.
    batman = Pools(("batman",), POOLS.reader)
    assert writes_ok(snap, batman) is True
    assert cluster_problems(snap, T, batman, snap.taken_at) == []


def test_a_backend_of_other_servers_is_left_alone() -> None:
    app = HAProxyServer(proxy="app_http", server="web1", status="UP")
    snap = healthy()
    snap = snap.model_copy(
        update={"haproxy": snap.haproxy.model_copy(update={"servers": (*snap.haproxy.servers, app)})}
    )
    assert cluster_problems(snap, T, POOLS, snap.taken_at) == []
    # Two backends of members, neither a pool: said in one line.
    both = backends_named(healthy(), {"pg_writer": "batman", "pg_reader": "robin"})
    texts = [p.text for p in cluster_problems(both, T, POOLS, both.taken_at) if p.key == "haproxy pools"]
    assert texts == [
        "HAProxy backends batman, robin are no writer or reader pools, routing not judged; "
        "add them to [haproxy] writer_backends or reader_backends"
    ]


def test_a_member_listed_by_name_and_by_address_is_one_member() -> None:
    by_name = [("pg1", "db1.example.com", 5432), ("pg2", "db2.example.com", 5432)]
    by_addr = [("pg1", "10.0.0.11", 5432), ("pg2", "10.0.0.12", 5432)]
    assert member_at((*by_name, *by_addr), "10.0.0.12", 5432) == "pg2"
    assert member_at(tuple(by_name), "10.0.0.12", 5432) is None  # which one: not known
    # On one host (ports tell members apart), a member listed twice is still the only one there.
    twice = (("pg1", "localhost", 5433), ("pg1", "127.0.0.1", 5433), ("pg2", "localhost", 5434))
    assert member_at(twice, "10.9.9.9", 5433) == "pg1"


@pytest.mark.parametrize(
    ("backend", "kind"),
    [
        ("pg_writer", "writer"),
        ("postgres-rw", "writer"),
        ("pg_ro", "reader"),
        ("postgres_ro1", "reader"),
        ("PG-RO", "reader"),
        ("standbys", "reader"),
        ("pgreplicas", "reader"),
        ("primary_ro", "writer"),  # the writer list is asked first
        # Two letters inside a longer word are no pool: a cluster named after a place, a scope.
        ("production", None),
        ("europe", None),
        ("tron", None),
        ("crowd", None),
        ("batman", None),
    ],
)
def test_default_pools_match_short_patterns_as_whole_words(backend: str, kind: str | None) -> None:
    assert DEFAULT_POOLS.kind(backend) == kind


def test_a_scope_named_backend_is_never_taken_for_a_reader_pool() -> None:
    # Patroni's example style (`listen <scope>`) with a scope that holds "ro": before, a reader pool
    # routing to the leader, and neither the writer check nor the "no pool" warning said anything.
    snap = backends_named(healthy(), {"pg_writer": "production"})
    problems = cluster_problems(snap, T, DEFAULT_POOLS, snap.taken_at)
    (problem,) = [p for p in problems if p.key == "haproxy pools"]
    assert problem.text.startswith("HAProxy backend production is no writer or reader pool")
    # Patterns the user gives follow the same rule.
    assert Pools(("w",), ("ro",)).kind("pg_ro") == "reader"
    assert Pools(("w",), ("ro",)).kind("prod_w") == "writer"
    assert Pools(("prod",), ()).kind("production") == "writer"
    assert Pools(("w1",), ()).kind("pg-w1") == "writer"  # a short pattern with a digit still matches
    assert Pools(("w1",), ()).kind("pg-w12") is None
