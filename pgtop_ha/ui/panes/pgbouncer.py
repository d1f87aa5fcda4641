"""pgBouncer pane: each pgBouncer's pools (clients, servers, waits) and where each database points.

A database pointing at a member that is not the leader is CRIT: after a failover such a pgBouncer
sends writes to a replica.
"""

from __future__ import annotations

from collections.abc import Sequence

from pgtop_ha.judge.rules import POOLER_CONTRADICTION
from pgtop_ha.models.derive import BouncerRates, bouncer_rates
from pgtop_ha.models.poolers import PgBouncerState
from pgtop_ha.models.snapshot import ClusterSnapshot
from pgtop_ha.models.thresholds import Level
from pgtop_ha.models.verdict import Mark
from pgtop_ha.ui.format import count, duration, per_second, rate, shown
from pgtop_ha.ui.panes.base import (
    Cell,
    Column,
    Context,
    PaneSpec,
    Place,
    Row,
    Table,
    blanks,
    cell,
    num,
    placeholder,
    state,
)

ADMIN_DB = "pgbouncer"  # the admin console's own pseudo-database: not an application pool
NO_BOUNCERS = "no pgBouncer configured; add [[pgbouncer]] (host, port, a stats_users role)"

COLUMNS = (
    Column("pooler", "pgBouncer"),
    Column("database", "Database"),
    Column("user", "User"),
    Column("health", "Health"),
    Column("cl_active", "Cl act", right=True),
    Column("cl_waiting", "Cl wait", right=True),
    Column("sv_active", "Sv act", right=True),
    Column("sv_idle", "Sv idle", right=True),
    Column("maxwait", "Max wait", right=True),
    Column("mode", "Mode"),
    Column("detail", "Detail"),
)

DB_COLUMNS = (
    Column("pooler", "pgBouncer"),
    Column("database", "Database"),
    Column("points", "Points at"),
    Column("health", "Health"),
    Column("conns", "Conns", right=True),
    Column("xacts", "Xact/s", right=True),
    Column("queries", "Query/s", right=True),
    Column("wait", "Wait/xact", right=True),
    Column("traffic", "In / out"),
    Column("detail", "Detail"),
)


# Every pooler finding is one rule's verdict (judge.problems.pooler_findings).
POOLER = POOLER_CONTRADICTION.id


def _previous(ctx: Context, name: str) -> PgBouncerState | None:
    prev = ctx.previous
    return None if prev is None else next((b for b in prev.pgbouncer if b.name == name), None)


def _state_row(b: PgBouncerState, columns: tuple[Column, ...], found: Sequence[Mark]) -> Row:
    """The row of a pgBouncer that could not be read this cycle, as the judge found it."""
    level = max((f.level for f in found), default=Level.OK)
    text = b.error or "not read yet"
    if b.slow_s is not None and b.slow_s >= 1:
        text = f"waiting {duration(b.slow_s)}"
    keys = [c.key for c in columns if c.key not in ("pooler", "health", "detail")]
    return Row(
        key=f"{b.name}|state",
        cells={
            "pooler": cell(shown(b.name, 32)),
            "health": state(level, POOLER),
            **blanks(*keys),
            "detail": cell(shown(text), level if level > Level.OK else None, rule=POOLER),
        },
    )


def rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A row per pool of every pgBouncer (the admin console's own pool left out)."""
    out: list[Row] = []
    judged = ctx.judged(snapshot)
    for b in snapshot.pgbouncer:
        if not b.ok and not b.pools:
            out.append(_state_row(b, COLUMNS, judged.bouncer(b)))
            continue
        for pool in b.pools:
            if pool.database == ADMIN_DB:
                continue
            finding = judged.bouncer_pool(pool)
            level = finding.level if finding else Level.OK
            out.append(
                Row(
                    key=f"{b.name}|{pool.database}|{pool.user}",
                    cells={
                        "pooler": cell(shown(b.name, 32)),
                        "database": cell(shown(pool.database, 32)),
                        "user": cell(shown(pool.user, 32)),
                        "health": state(level, POOLER),
                        "cl_active": num(count(pool.cl_active), pool.cl_active),
                        "cl_waiting": num(
                            count(pool.cl_waiting),
                            pool.cl_waiting,
                            level if pool.cl_waiting else None,
                            POOLER,
                        ),
                        "sv_active": num(count(pool.sv_active), pool.sv_active),
                        "sv_idle": num(count(pool.sv_idle), pool.sv_idle),
                        "maxwait": num(duration(pool.maxwait_s), pool.maxwait_s),
                        "mode": cell(pool.pool_mode or "-"),
                        "detail": _detail(finding),
                    },
                )
            )
    if not snapshot.pgbouncer:
        out.append(placeholder(COLUMNS, NO_BOUNCERS))
    return out


def _points_at(snapshot: ClusterSnapshot, host: str | None, port: int | None, member: str | None) -> str:
    """Where a database points: the member, else the probe endpoint at that address, else host:port."""
    if member is not None:
        return member
    where = f"{host}:{port}"
    endpoint = next((p for p in snapshot.probes if p.target == where and p.kind != "write"), None)
    if endpoint is not None:
        return f"{endpoint.endpoint} endpoint ({where})"
    return where


def database_rows(snapshot: ClusterSnapshot, ctx: Context) -> list[Row]:
    """A row per database of every pgBouncer: where it points, connections, rates."""
    out: list[Row] = []
    judged = ctx.judged(snapshot)
    for b in snapshot.pgbouncer:
        rates = bouncer_rates(_previous(ctx, b.name), b)
        for db in b.databases:
            if db.name == ADMIN_DB:
                continue
            finding = judged.bouncer_database(db)
            level = finding.level if finding else Level.OK
            r = rates.get(db.name, BouncerRates())
            traffic = "-" if r.received_s is None else f"{rate(r.received_s)} / {rate(r.sent_s)}"
            conns = f"{count(db.current_connections)}/{count(db.pool_size)}"
            out.append(
                Row(
                    key=f"{b.name}|db|{db.name}",
                    node=db.member,
                    cells={
                        "pooler": cell(shown(b.name, 32)),
                        "database": cell(shown(db.name, 32)),
                        "points": cell(
                            shown(_points_at(snapshot, db.host, db.port, db.member), 48),
                            level if level > Level.OK else None,
                            rule=POOLER,
                        ),
                        "health": state(level, POOLER),
                        "conns": num(conns, db.current_connections),
                        "xacts": num(per_second(r.xacts_s), r.xacts_s),
                        "queries": num(per_second(r.queries_s), r.queries_s),
                        "wait": num(
                            duration(None if r.wait_ms_per_xact is None else r.wait_ms_per_xact / 1000),
                            r.wait_ms_per_xact,
                        ),
                        "traffic": cell(traffic),
                        "detail": _detail(finding),
                    },
                )
            )
    return out


def _detail(finding: Mark | None) -> Cell:
    """What the judge found on the row, at its level."""
    if finding is None:
        return cell("")
    return cell(shown(finding.text), finding.level, rule=finding.rule)


DATABASES = Table("pgbouncer-databases", DB_COLUMNS, database_rows, optional=True, cursor=False)
PANE = PaneSpec(
    id="pgbouncer",
    title="pgBouncer",
    key="u",
    columns=COLUMNS,
    rows=rows,
    help="pools, waiting clients, where databases point (key only)",
    more=(DATABASES,),
    place=Place(dashboard=False),
)
