"""Cluster pane: one row per member, Patroni, PostgreSQL and HAProxy side by side."""

from __future__ import annotations

from pgtop_ha.judge.certs import cert_days_left, cert_level, member_certs
from pgtop_ha.judge.grades import down_level, pending_level, upstream_level
from pgtop_ha.judge.haproxy import is_up, routes
from pgtop_ha.judge.leader import is_leader
from pgtop_ha.judge.problems import upstream_mismatch
from pgtop_ha.judge.replication import lag_level
from pgtop_ha.judge.routing import server_level
from pgtop_ha.judge.sources import member_state, node_state, reach_level, unreachable
from pgtop_ha.models.derive import age_s, member_names
from pgtop_ha.models.roles import short_name
from pgtop_ha.models.servers import upstream_of
from pgtop_ha.models.snapshot import ClusterSnapshot, HAProxyServer
from pgtop_ha.models.thresholds import Level
from pgtop_ha.ui.format import INVALID, age, count, human_bytes
from pgtop_ha.ui.panes.base import (
    Cell,
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    cell,
    name_column,
    num,
    same_row,
    state,
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


def _route(snapshot: ClusterSnapshot, kind: str, srv: HAProxyServer | None) -> tuple[str, Level | None]:
    if srv is None:
        return "-", None
    level = server_level(snapshot, kind, srv)
    # A server that is DOWN where its pool expects it (a replica in the writer pool) is no colour.
    return srv.status or "?", level if level > Level.OK or is_up(srv) else None


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """One row per member: role by Patroni and by PostgreSQL, routing, lag, reachability."""
    writers = routes(snapshot, ctx.pools, "writer")
    readers = routes(snapshot, ctx.pools, "reader")
    out = []
    for name in member_names(snapshot):
        m = snapshot.member(name)
        n = snapshot.node(name)
        leader = is_leader(m)
        problems = ctx.member_problems(snapshot, name)
        worst = max((p.level for p in problems), default=Level.OK)
        problem = (problems[0].short or problems[0].text) if problems else ""
        if len(problems) > 1:
            problem += f" (+{len(problems) - 1})"
        if n is None:
            pg = cell("?")
        elif not n.reachable:
            pg = cell("DOWN", down_level(True))
        elif n.in_recovery is None:
            pg = cell("?")
        else:
            pg = cell("standby" if n.in_recovery else "primary")
        w_text, w_level = _route(snapshot, "writer", writers.get(name))
        r_text, r_level = _route(snapshot, "reader", readers.get(name))
        timeline = (m.timeline if m else None) or (n.timeline if n else None)
        lag = None if leader or m is None else m.lag_bytes
        lag_text = human_bytes(lag)
        lag_cell = num(
            lag_text,
            lag,
            lag_level(ctx.thresholds, lag) if lag is not None and lag_text != INVALID else None,
        )
        out.append(
            same_row(
                name,
                {
                    "member": cell(name),
                    "health": state(worst),
                    "role": cell(short_name(m.role), None) if m else cell("not in DCS", down_level(True)),
                    "pg": pg,
                    "problem": cell(problem, worst if problems else None),
                    "writer": cell(w_text, w_level),
                    "reader": cell(r_text, r_level),
                    "tl": num(count(timeline), timeline),
                    "lag": lag_cell,
                    "upstream": _upstream(snapshot, name),
                    "reach": _reach(snapshot, name, ctx),
                    "state": cell((m.state or "?") if m else "-"),
                    "restart": cell(
                        "yes" if m and m.pending_restart else "-",
                        pending_level(bool(m and m.pending_restart)),
                    ),
                    "pause": cell("yes" if (m and m.pause) or snapshot.cluster.pause else "-"),
                    "cert": _cert(snapshot, name, ctx),
                },
                name,
            )
        )
    return out


def _cert(snapshot: ClusterSnapshot, name: str, ctx: Context) -> Cell:
    """Days left on the member's soonest-ending certificate (REST or PostgreSQL); "-" without TLS."""
    days = [cert_days_left(end, ctx.now) for _, end in member_certs(snapshot, name)]
    soonest = min((d for d in days if d is not None), default=None)
    if soonest is None:
        return num("-", None)
    level = cert_level(soonest)
    return num(f"{soonest:.0f}d", soonest, level if level > Level.OK else None)


def _upstream(snapshot: ClusterSnapshot, name: str) -> Cell:
    """Whom a standby streams from, as patronictl topology draws it; a cascade marked."""
    got = upstream_of(snapshot, name)
    if got is None:
        return cell("-")
    cascade = got != snapshot.cluster.leader
    return cell(f"└ {got}" if cascade else got, upstream_level(upstream_mismatch(snapshot, name) is not None))


def _reach(snapshot: ClusterSnapshot, name: str, ctx: Context) -> Cell:
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
            return cell(text, reach_level(False, True), max(s for _, s in waits))
        return cell("ok", Level.OK)
    since = age_s(ctx.now, last) if last is not None else None
    ago = f" {age(since)}" if since is not None else " never"
    return cell("✖ " + "+".join(down) + ago, reach_level(True, False), since or 0.0)


PANE = PaneSpec(
    id="cluster",
    title="Cluster",
    key="1",
    columns=COLUMNS,
    rows=rows,
    help="roles by Patroni and PostgreSQL, routing, lag, reach",
    place=Place(span=2, max_height=14),
)
