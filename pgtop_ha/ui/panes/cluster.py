"""Cluster pane: one row per member, Patroni, PostgreSQL and HAProxy side by side."""

from __future__ import annotations

from collections.abc import Sequence

from pgtop_ha.judge.rules import (
    PATRONI_PENDING_RESTART,
    PATRONI_UNLISTED,
    PG_DOWN_LEADER,
    PG_DOWN_LEADER_ROUTED,
    PG_DOWN_ROUTED,
    PG_PENDING,
    PG_SLOW,
    PG_UNREACHABLE,
    REPLICATION_LAG,
    REPLICATION_UPSTREAM,
    REST_PENDING,
    REST_SLOW,
    REST_UNREACHABLE,
    TLS_EXPIRY,
)
from pgtop_ha.judge.view import Judgement, cert_days_left, member_certs
from pgtop_ha.models.derive import age_s, member_names
from pgtop_ha.models.haproxy import is_up, routes
from pgtop_ha.models.leader import is_leader
from pgtop_ha.models.roles import short_name
from pgtop_ha.models.servers import upstream_of
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.sources import member_state, node_state, unreachable
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Verdict
from pgtop_ha.ui.format import INVALID, age, count, human_bytes
from pgtop_ha.ui.panes.base import (
    Cell,
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    by_rule,
    cell,
    name_column,
    num,
    of_problem,
    same_row,
    worst_state,
)

COLUMNS = (
    name_column("member", "Member"),
    Column("health", "Health"),
    Column("role", "Role"),
    Column("pg", "PG"),
    Column("problem", "Problem"),
    Column("writer", "Writer"),
    Column("reader", "Reader"),
    Column("tl", "TL", right=True),
    Column("lag", "Lag", right=True),
    Column("upstream", "From"),
    Column("reach", "Reach"),
    Column("state", "Patroni"),
    Column("restart", "Restart"),
    Column("pause", "Pause"),
    Column("cert", "Cert", right=True),
)


PG_DOWN = (PG_DOWN_LEADER_ROUTED, PG_DOWN_LEADER, PG_DOWN_ROUTED, PG_UNREACHABLE)
REACH = (*PG_DOWN, PG_SLOW, PG_PENDING, REST_UNREACHABLE, REST_SLOW, REST_PENDING)


def _route(judged: Judgement, kind: str, srv: HAProxyServer | None) -> Cell:
    if srv is None:
        return cell("-")
    mark = judged.server(srv, kind)
    if mark.level > Level.OK:
        return cell(srv.status or "?", mark.level, rule=mark.rule)
    # A server that is DOWN where its pool expects it (a replica in the writer pool) is no colour.
    return cell(srv.status or "?", Level.OK if is_up(srv) else None)


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per member: role by Patroni and by PostgreSQL, routing, lag, reachability."""
    writers = routes(snapshot, ctx.pools, "writer")
    readers = routes(snapshot, ctx.pools, "reader")
    judged = ctx.judged(snapshot)
    out = []
    for name in member_names(snapshot):
        m = snapshot.member(name)
        n = snapshot.node(name)
        leader = is_leader(m)
        problems = judged.member(name)
        first: Verdict | None = max(problems, key=lambda p: p.level, default=None)
        problem = (first.short or first.text) if first is not None else ""
        if len(problems) > 1:
            problem += f" (+{len(problems) - 1})"
        if n is None:
            pg = cell("?")
        elif not n.reachable:
            pg = by_rule(cell("DOWN"), problems, *PG_DOWN)
        elif n.in_recovery is None:
            pg = cell("?")
        else:
            pg = cell("standby" if n.in_recovery else "primary")
        timeline = (m.timeline if m else None) or (n.timeline if n else None)
        lag = None if leader or m is None else m.lag_bytes
        lag_text = human_bytes(lag)
        lag_cell = num(lag_text, lag)
        if lag is not None and lag_text != INVALID:
            lag_cell = by_rule(lag_cell, problems, REPLICATION_LAG, ok=True)
        out.append(
            same_row(
                name,
                {
                    "member": cell(name),
                    "health": worst_state(problems),
                    "role": cell(short_name(m.role))
                    if m
                    else by_rule(cell("not in DCS"), problems, PATRONI_UNLISTED),
                    "pg": pg,
                    "problem": of_problem(problem, first),
                    "writer": _route(judged, "writer", writers.get(name)),
                    "reader": _route(judged, "reader", readers.get(name)),
                    "tl": num(count(timeline), timeline),
                    "lag": lag_cell,
                    "upstream": by_rule(_upstream(snapshot, name), problems, REPLICATION_UPSTREAM),
                    "reach": _reach(snapshot, name, ctx, problems),
                    "state": cell((m.state or "?") if m else "-"),
                    "restart": by_rule(
                        cell("yes" if m and m.pending_restart else "-"), problems, PATRONI_PENDING_RESTART
                    ),
                    "pause": cell("yes" if (m and m.pause) or snapshot.cluster.pause else "-"),
                    "cert": _cert(snapshot, name, ctx, problems),
                },
                name,
            )
        )
    return out


def _cert(snapshot: ClusterSnapshot, name: str, ctx: Context, problems: Sequence[Verdict]) -> Cell:
    """Days left on the member's soonest-ending certificate (REST or PostgreSQL); "-" without TLS."""
    days = [cert_days_left(end, ctx.now) for _, end in member_certs(snapshot, name)]
    soonest = min((d for d in days if d is not None), default=None)
    if soonest is None:
        return num("-", None)
    return by_rule(num(f"{soonest:.0f}d", soonest), problems, TLS_EXPIRY)


def _upstream(snapshot: ClusterSnapshot, name: str) -> Cell:
    """Whom a standby streams from, as patronictl topology draws it; a cascade marked."""
    got = upstream_of(snapshot, name)
    if got is None:
        return cell("-")
    cascade = got != snapshot.cluster.leader
    return cell(f"└ {got}" if cascade else got)


def _reach(snapshot: ClusterSnapshot, name: str, ctx: Context, problems: Sequence[Verdict]) -> Cell:
    m, n = snapshot.member(name), snapshot.node(name)
    states = {
        "REST": member_state(m) if m is not None else None,
        "PG": node_state(n) if n is not None else None,
    }
    down, last = unreachable(m, n)
    if not down:
        # Slow is not down: the last answer is kept and shown, marked with how long it is waited for.
        waits = [
            (what, x.slow_s)
            for what, x, st in (("REST", m, states["REST"]), ("PG", n, states["PG"]))
            if x is not None and st in ("slow", "pending") and x.slow_s is not None
        ]
        if waits:
            text = "▲ " + "+".join(w for w, _ in waits) + f" slow {max(s for _, s in waits):.0f}s"
            return by_rule(cell(text, sort=max(s for _, s in waits)), problems, *REACH)
        return cell("ok", Level.OK)
    since = age_s(ctx.now, last) if last is not None else None
    ago = f" {age(since)}" if since is not None else " never"
    return by_rule(cell("✖ " + "+".join(down) + ago, sort=since or 0.0), problems, *REACH)


PANE = PaneSpec(
    id="cluster",
    title="Cluster",
    key="1",
    columns=COLUMNS,
    rows=rows,
    help="roles by Patroni and PostgreSQL, routing, lag, reach",
    place=Place(span=2, max_height=14),
)
