"""HAProxy pane: writer and reader pools, each server's status, check, sessions, last change."""

from __future__ import annotations

from pgtop_ha.models.health import Level, is_leader, is_up
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.ui.format import age, count
from pgtop_ha.ui.panes.base import Column, Context, PaneSpec, Row, cell, num, state

COLUMNS = (
    Column("pool", "Pool"),
    Column("backend", "Backend"),
    Column("server", "Server"),
    Column("health", "Health"),
    Column("status", "Status"),
    Column("check", "Check"),
    Column("sess", "Sess", right=True),
    Column("total", "Total", right=True),
    Column("lastchg", "Changed", right=True),
)


def server_level(snapshot: ClusterSnapshot, kind: str | None, srv: HAProxyServer) -> Level:
    """Is this server's status what its pool expects of its member's Patroni role?"""
    leader = is_leader(snapshot.member(srv.server))
    known = snapshot.member(srv.server) is not None
    node = snapshot.node(srv.server)
    up = is_up(srv)
    status = (srv.status or "").upper()
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
    if status.startswith("DOWN") and kind is None:
        return Level.WARN
    return Level.OK


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A summary row per backend, then one row per server."""
    out = []
    backends: dict[str, list[HAProxyServer]] = {}
    for srv in snapshot.haproxy.servers:
        backends.setdefault(srv.proxy, []).append(srv)
    rank = {"writer": 0, "reader": 1}
    for proxy in sorted(backends, key=lambda p: (rank.get(ctx.pools.kind(p) or "", 2), p)):
        kind = ctx.pools.kind(proxy)
        servers = backends[proxy]
        up = sum(1 for s in servers if is_up(s))
        levels = [server_level(snapshot, kind, s) for s in servers]
        worst = max(levels, default=Level.OK)
        if kind == "writer" and up != 1:
            worst = Level.CRIT
        if kind == "reader" and up == 0:
            worst = max(worst, Level.WARN)
        sessions = sum(s.sessions or 0 for s in servers)
        out.append(
            Row(
                key=f"{proxy}|",
                cells=(
                    cell(kind or "other"),
                    cell(proxy),
                    cell("(pool)"),
                    state(worst),
                    cell(f"{up}/{len(servers)} UP"),
                    cell(""),
                    num(count(sessions), sessions),
                    cell(""),
                    cell(""),
                ),
            )
        )
        for srv, level in zip(servers, levels, strict=True):
            out.append(
                Row(
                    key=f"{proxy}|{srv.server}",
                    node=srv.server,
                    cells=(
                        cell(kind or "other"),
                        cell(proxy),
                        cell(srv.server),
                        state(level),
                        cell(srv.status or "?", level if level > Level.OK else None),
                        cell(srv.check_status or "-"),
                        num(count(srv.sessions), srv.sessions),
                        num(count(srv.sessions_total), srv.sessions_total),
                        num(age(srv.last_change_s), srv.last_change_s),
                    ),
                )
            )
    if snapshot.haproxy.error:
        out.append(
            Row(
                key="|error",
                cells=(
                    cell("error"),
                    cell("stats"),
                    cell(""),
                    state(Level.WARN),
                    cell(snapshot.haproxy.error, Level.WARN),
                    *(cell("") for _ in range(4)),
                ),
            )
        )
    return out


PANE = PaneSpec("haproxy", "HAProxy", "2", COLUMNS, rows)
