"""HAProxy's routing against Patroni's roles: one grade per server and per pool, for every pane."""

from __future__ import annotations

from collections.abc import Sequence

from pgtop_ha.judge.rules import (
    HAPROXY_CHECK_UNANSWERED,
    PG_DOWN_LEADER_ROUTED,
    PG_DOWN_ROUTED,
    ROUTING_NO_READER,
    ROUTING_NO_WRITER,
    ROUTING_READER_DOWN,
    ROUTING_SEVERAL_WRITERS,
    ROUTING_WRITES_TO_NON_LEADER,
)
from pgtop_ha.judge.tags import tag_true
from pgtop_ha.models.haproxy import check_unanswered, is_up
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.servers import member_of
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark


def server_mark(snapshot: ClusterSnapshot, kind: str | None, srv: HAProxyServer) -> Mark:
    """Is this server's status what its pool (writer, reader or none) expects of its member?"""
    expected = _pool_mark(snapshot, kind, srv)
    # A check that gets no answer (Patroni stopped, its host gone) is never what a pool expects.
    if expected.level == Level.OK and check_unanswered(srv):
        return Mark(HAPROXY_CHECK_UNANSWERED.id, Level.WARN, "HAProxy's check gets no answer")
    return expected


_FINE = Mark("", Level.OK, "")


def _pool_mark(snapshot: ClusterSnapshot, kind: str | None, srv: HAProxyServer) -> Mark:
    name = member_of(srv)
    leader = is_leader(snapshot.member(name))
    known = snapshot.member(name) is not None
    node = snapshot.node(name)
    up = is_up(srv)
    if kind == "writer":
        if up and known and not leader:
            return Mark(ROUTING_WRITES_TO_NON_LEADER.id, Level.CRIT, "HAProxy routes writes to a non-leader")
        if up and node is not None and not node.reachable:
            # Writes routed to a PostgreSQL that does not answer.
            rule = PG_DOWN_LEADER_ROUTED if leader else PG_DOWN_ROUTED
            return Mark(rule.id, Level.CRIT, "PG DOWN, HAProxy still routes writes here")
        if leader and not up:
            others = any(is_up(s) for s in snapshot.haproxy.servers if s.proxy == srv.proxy)
            rule = ROUTING_WRITES_TO_NON_LEADER if others else ROUTING_NO_WRITER
            return Mark(rule.id, Level.CRIT, "the leader is not UP in the writer pool")
        return _FINE
    # Patroni's /replica answers 503 for a replica tagged noloadbalance: out of the pool by design.
    member = snapshot.member(name)
    balanced = member is not None and not tag_true(member.tags, "noloadbalance")
    if kind == "reader" and not up and balanced and not leader:
        return Mark(ROUTING_READER_DOWN.id, Level.WARN, "a replica is not UP in HAProxy's reader pool")
    # A backend that is no pool (a sync-only one, say) may keep servers DOWN by design: not judged.
    return _FINE


def pool_mark(kind: str | None, servers: Sequence[HAProxyServer], marks: Sequence[Mark]) -> Mark:
    """A pool's grade: its worst server, CRIT for a writer pool without exactly one UP."""
    up = sum(1 for s in servers if is_up(s))
    worst = max(marks, key=lambda m: m.level, default=_FINE)
    if kind == "writer" and up == 0:
        return Mark(ROUTING_NO_WRITER.id, Level.CRIT, "HAProxy has no writer UP")
    if kind == "writer" and up > 1:
        return Mark(ROUTING_SEVERAL_WRITERS.id, Level.CRIT, "HAProxy has several writers UP")
    if kind == "reader" and up == 0 and worst.level < Level.WARN:
        return Mark(ROUTING_NO_READER.id, Level.WARN, "HAProxy has no reader UP")
    return worst
