"""HAProxy pane: writer and reader pools, each server's status, check, sessions, last change."""

from __future__ import annotations

from pgtop_ha.judge.grades import UNREAD
from pgtop_ha.judge.haproxy import is_up
from pgtop_ha.judge.routing import pool_level, server_level
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import age, age_step, count
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    cell,
    name_column,
    num,
    same_row,
    state,
)

COLUMNS = (
    Column("pool", "Pool"),
    Column("backend", "Backend"),
    name_column("server", "Server"),
    Column("health", "Health"),
    Column("status", "Status"),
    Column("check", "Check"),
    Column("sess", "Sess", right=True),
    Column("total", "Total", right=True),
    Column("lastchg", "Changed", right=True),
)


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
        levels = [server_level(snapshot, kind, s) for s in servers]
        out.append(_pool_row(proxy, kind, servers, pool_level(kind, servers, levels)))
        out.extend(_server_row(kind, srv, level) for srv, level in zip(servers, levels, strict=True))
    if snapshot.haproxy.error:
        out.append(
            Row(
                key="|error",
                cells={
                    "pool": cell("error"),
                    "backend": cell("stats"),
                    "server": cell(""),
                    "health": state(UNREAD),
                    "status": cell(snapshot.haproxy.error, UNREAD),
                    **blanks("check", "sess", "total", "lastchg"),
                },
            )
        )
    if snapshot.haproxy.not_shown:
        out.append(
            Row(
                key="|more",
                cells={
                    "pool": cell("…"),
                    "backend": cell(f"{snapshot.haproxy.not_shown} more servers not shown"),
                    **blanks("server", "health", "status", "check", "sess", "total", "lastchg"),
                },
            )
        )
    return out


def _pool_row(proxy: str, kind: str | None, servers: list[HAProxyServer], worst: Level) -> Row:
    """The summary row of one backend: how many servers are up, and their sessions."""
    up = sum(1 for s in servers if is_up(s))
    sessions = sum(s.sessions or 0 for s in servers)
    cells = {
        "pool": cell(kind or "other"),
        "backend": cell(proxy),
        "server": cell("(pool)"),
        "health": state(worst),
        "status": cell(f"{up}/{len(servers)} UP"),
        "check": cell(""),
        "sess": num(count(sessions), sessions),
        "total": cell(""),
        "lastchg": cell(""),
    }
    return same_row(f"{proxy}|", cells)


def _server_row(kind: str | None, srv: HAProxyServer, level: Level) -> Row:
    """The row of one server, built from its model and its grade."""
    changed = age_step(srv.last_change_s)  # stepped: the row repaints as its text changes
    cells = {
        "pool": cell(kind or "other"),
        "backend": cell(srv.proxy),
        # The member's name, as everywhere else on screen; HAProxy's own is in the events.
        "server": cell(srv.member or srv.server),
        "health": state(level),
        "status": cell(srv.status or "?", level if level > Level.OK else None),
        "check": cell(srv.check_status or "-"),
        "sess": num(count(srv.sessions), srv.sessions),
        "total": num(count(srv.sessions_total), srv.sessions_total),
        "lastchg": num(age(changed), changed),
    }
    return same_row(f"{srv.proxy}|{srv.server}", cells, srv.member or srv.server)


PANE = PaneSpec(
    id="haproxy",
    title="HAProxy",
    key="2",
    columns=COLUMNS,
    rows=rows,
    help="writer/reader pools: server status, check, sessions",
)
