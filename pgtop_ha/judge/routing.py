"""HAProxy's routing against Patroni's roles: one grade per server and per pool, for every pane."""

from __future__ import annotations

from collections.abc import Sequence

from pgtop_ha.judge.haproxy import check_unanswered, is_up, state_word
from pgtop_ha.judge.leader import is_leader
from pgtop_ha.models.servers import member_of
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.thresholds import Level


def server_level(snapshot: ClusterSnapshot, kind: str | None, srv: HAProxyServer) -> Level:
    """Is this server's status what its pool (writer, reader or none) expects of its member?"""
    expected = _pool_level(snapshot, kind, srv)
    # A check that gets no answer (Patroni stopped, its host gone) is never what a pool expects.
    return max(expected, Level.WARN) if check_unanswered(srv) else expected


def _pool_level(snapshot: ClusterSnapshot, kind: str | None, srv: HAProxyServer) -> Level:
    name = member_of(srv)
    leader = is_leader(snapshot.member(name))
    known = snapshot.member(name) is not None
    node = snapshot.node(name)
    up = is_up(srv)
    if kind == "writer":
        if up and known and not leader:
            return Level.CRIT
        if up and node is not None and not node.reachable:
            return Level.CRIT  # writes routed to a PostgreSQL that does not answer
        if leader and not up:
            return Level.CRIT
        return Level.OK
    if kind == "reader" and not up and known and not leader:
        return Level.WARN
    if state_word(srv.status) == "DOWN" and kind is None:
        return Level.WARN
    return Level.OK


def pool_level(kind: str | None, servers: Sequence[HAProxyServer], levels: Sequence[Level]) -> Level:
    """A pool's grade: its worst server, CRIT for a writer pool without exactly one UP."""
    up = sum(1 for s in servers if is_up(s))
    worst = max(levels, default=Level.OK)
    if kind == "writer" and up != 1:
        return Level.CRIT
    if kind == "reader" and up == 0:
        return max(worst, Level.WARN)
    return worst
