"""HAProxy's routing against the roles: a replica out of the reader pool, unless Patroni keeps it out."""

from __future__ import annotations

from pgtop_ha.judge.judgement import judgement
from pgtop_ha.judge.rules import ROUTING_NO_READER, ROUTING_READER_DOWN
from pgtop_ha.models.snapshot import ClusterSnapshot
from tests.models.builders import member
from tests.ui import fixtures as fx

SETTINGS = fx.settings()
POOLS = SETTINGS.haproxy.pools()


def _reader_down(snap: ClusterSnapshot, *names: str) -> ClusterSnapshot:
    servers = tuple(
        s.model_copy(update={"status": "DOWN", "check_status": "L7STS", "check_code": 503})
        if s.proxy == "pg_reader" and s.server in names
        else s
        for s in snap.haproxy.servers
    )
    return snap.model_copy(update={"haproxy": snap.haproxy.model_copy(update={"servers": servers})})


def _rules(snap: ClusterSnapshot) -> list[tuple[str, str | None]]:
    return [(v.rule, v.subject) for v in judgement(snap, SETTINGS.thresholds, POOLS, ()).verdicts]


def test_a_replica_down_in_the_reader_pool_is_a_warning() -> None:
    assert _rules(fx.healthy()) == []
    assert _rules(_reader_down(fx.healthy(), "node3")) == [(ROUTING_READER_DOWN.id, "node3")]


def test_a_replica_tagged_noloadbalance_is_out_of_the_pool_by_design() -> None:
    snap = member(fx.healthy(), "node3", tags={"noloadbalance": True})
    assert _rules(_reader_down(snap, "node3")) == []


def test_a_reader_pool_with_none_up_says_so_once() -> None:
    found = _rules(_reader_down(fx.healthy(), "node2", "node3"))
    assert found.count((ROUTING_NO_READER.id, None)) == 1
    assert {s for r, s in found if r == ROUTING_READER_DOWN.id} == {"node2", "node3"}
