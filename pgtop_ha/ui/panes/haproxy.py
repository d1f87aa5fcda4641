"""HAProxy pane: writer and reader pools, each server's status, check, sessions, last change."""

from __future__ import annotations

from pgtop_ha.judge.rules import HAPROXY_STATS
from pgtop_ha.models.haproxy import is_up
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import age, age_step, count
from pgtop_ha.ui.panes.base import (
    Column,
    Context,
    PaneSpec,
    Row,
    blanks,
    by_rule,
    cell,
    marked,
    name_column,
    num,
    same_row,
    state,
    worst_state,
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
    judged = ctx.judged(snapshot)
    for proxy in sorted(backends, key=lambda p: (rank.get(ctx.pools.kind(p) or "", 2), p)):
        kind = ctx.pools.kind(proxy)
        servers = backends[proxy]
        marks = [judged.server(s, kind) for s in servers]
        out.append(_pool_row(proxy, kind, servers, judged.pool(kind, servers)))
        out.extend(_server_row(kind, srv, mark) for srv, mark in zip(servers, marks, strict=True))
    if snapshot.haproxy.error:
        unread = [p for p in ctx.on(snapshot, None) if p.rule == HAPROXY_STATS.id]
        out.append(
            Row(
                key="|error",
                cells={
                    "pool": cell("error"),
                    "backend": cell("stats"),
                    "server": cell(""),
                    "health": worst_state(unread),
                    "status": by_rule(cell(snapshot.haproxy.error), unread, HAPROXY_STATS),
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


def _pool_row(proxy: str, kind: str | None, servers: list[HAProxyServer], worst: Mark) -> Row:
    """The summary row of one backend: how many servers are up, and their sessions."""
    up = sum(1 for s in servers if is_up(s))
    sessions = sum(s.sessions or 0 for s in servers)
    cells = {
        "pool": cell(kind or "other"),
        "backend": cell(proxy),
        "server": cell("(pool)"),
        "health": state(worst.level, worst.rule),
        "status": cell(f"{up}/{len(servers)} UP"),
        "check": cell(""),
        "sess": num(count(sessions), sessions),
        "total": cell(""),
        "lastchg": cell(""),
    }
    return same_row(f"{proxy}|", cells)


def _server_row(kind: str | None, srv: HAProxyServer, mark: Mark) -> Row:
    """The row of one server, built from its model and its grade."""
    changed = age_step(srv.last_change_s)  # stepped: the row repaints as its text changes
    cells = {
        "pool": cell(kind or "other"),
        "backend": cell(srv.proxy),
        # The member's name, as everywhere else on screen; HAProxy's own is in the events.
        "server": cell(srv.member or srv.server),
        "health": state(mark.level, mark.rule),
        "status": marked(srv.status or "?", (mark,)),
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
