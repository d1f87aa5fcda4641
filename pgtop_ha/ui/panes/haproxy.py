"""HAProxy pane: writer and reader pools, each server's status, check, sessions, last change."""

from __future__ import annotations

import functools

from pgtop_ha.judge.grades import UNREAD
from pgtop_ha.judge.health import is_up
from pgtop_ha.judge.routing import pool_level, server_level
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import age, age_step, count
from pgtop_ha.ui.panes.base import (
    ROWS_KEPT,
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    cell,
    name_column,
    num,
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
        up = sum(1 for s in servers if is_up(s))
        levels = [server_level(snapshot, kind, s) for s in servers]
        worst = pool_level(kind, servers, levels)
        sessions = sum(s.sessions or 0 for s in servers)
        out.append(_pool_row(proxy, kind, worst, up, len(servers), sessions))
        for srv, level in zip(servers, levels, strict=True):
            out.append(
                _server_row(
                    proxy,
                    kind,
                    level,
                    srv.server,
                    srv.member,
                    srv.status,
                    srv.check_status,
                    srv.sessions,
                    srv.sessions_total,
                    age_step(srv.last_change_s),
                )
            )
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


@functools.lru_cache(maxsize=ROWS_KEPT)
def _pool_row(proxy: str, kind: str | None, worst: Level, up: int, servers: int, sessions: int) -> Row:
    return Row(
        key=f"{proxy}|",
        cells={
            "pool": cell(kind or "other"),
            "backend": cell(proxy),
            "server": cell("(pool)"),
            "health": state(worst),
            "status": cell(f"{up}/{servers} UP"),
            "check": cell(""),
            "sess": num(count(sessions), sessions),
            "total": cell(""),
            "lastchg": cell(""),
        },
    )


@functools.lru_cache(maxsize=ROWS_KEPT)
def _server_row(
    proxy: str,
    kind: str | None,
    level: Level,
    server: str,
    member: str | None,  # when the server is not named as its member (models/servers.py)
    status: str | None,
    check_status: str | None,
    sessions: int | None,
    sessions_total: int | None,
    changed: float | None,  # seconds since the last change, as age_step
) -> Row:
    return Row(
        key=f"{proxy}|{server}",
        node=member or server,
        cells={
            "pool": cell(kind or "other"),
            "backend": cell(proxy),
            # The member's name, as everywhere else on screen; HAProxy's own is in the events.
            "server": cell(member or server),
            "health": state(level),
            "status": cell(status or "?", level if level > Level.OK else None),
            "check": cell(check_status or "-"),
            "sess": num(count(sessions), sessions),
            "total": num(count(sessions_total), sessions_total),
            "lastchg": num(age(changed), changed),
        },
    )


PANE = PaneSpec(
    id="haproxy",
    title="HAProxy",
    key="2",
    columns=COLUMNS,
    rows=rows,
    help="writer/reader pools: server status, check, sessions",
)
