"""The connection poolers in front of PostgreSQL, pure: pgBouncer and pgpool-II as read, and the rules.

What a pooler says comes from its admin commands; what it should say comes from Patroni. The
contradictions are the point: a database still pointing at the old leader, pgpool-II's primary
not Patroni's leader, a node pgpool-II keeps down while Patroni says it streams.
"""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen
from pgtop_ha.models.thresholds import Level


class BouncerPool(Frozen):
    """One row of pgBouncer's SHOW POOLS: clients and server connections of a database/user pair."""

    database: str
    user: str
    cl_active: int | None = None
    cl_waiting: int | None = None
    sv_active: int | None = None
    sv_idle: int | None = None
    sv_used: int | None = None
    maxwait_s: float | None = None  # how long the oldest waiting client has waited
    pool_mode: str | None = None


class BouncerDatabase(Frozen):
    """One row of SHOW DATABASES: where pgBouncer sends a database's connections."""

    name: str
    host: str | None = None  # None: a unix socket (or the admin console itself)
    port: int | None = None
    database: str | None = None
    pool_size: int | None = None
    current_connections: int | None = None
    paused: bool = False
    disabled: bool = False
    member: str | None = None  # the Patroni member listening at host:port, when it is one


class BouncerStats(Frozen):
    """One row of SHOW STATS: a database's counters since pgBouncer started (rates come from two)."""

    database: str
    xacts: int | None = None
    queries: int | None = None
    received_bytes: int | None = None
    sent_bytes: int | None = None
    wait_us: int | None = None  # total time clients waited for a server connection


class PgBouncerState(Frozen):
    """One pgBouncer's admin console read in one cycle, or why it could not be."""

    name: str
    target: str  # host:port of the admin console
    ok: bool = False
    error: str | None = None
    last_ok_at: datetime | None = None
    slow_s: float | None = None  # a read still running within its time limit, for so long
    pools: tuple[BouncerPool, ...] = ()
    databases: tuple[BouncerDatabase, ...] = ()
    stats: tuple[BouncerStats, ...] = ()
    truncated: bool = False  # more rows than kept


class PgpoolNode(Frozen):
    """One row of pgpool-II's SHOW pool_nodes, with the Patroni member at its address."""

    node_id: int
    host: str | None = None
    port: int | None = None
    status: str | None = None  # pgpool's own: up, waiting, down, unused
    pg_status: str | None = None  # what pgpool's health check last found
    lb_weight: float | None = None
    role: str | None = None  # pgpool's idea: primary / standby
    pg_role: str | None = None  # what the backend says of itself (pg_is_in_recovery)
    select_cnt: int | None = None
    load_balance_node: bool | None = None
    replication_delay: int | None = None  # bytes (or seconds with delay_threshold_by_time)
    replication_state: str | None = None
    sync_state: str | None = None
    last_status_change: str | None = None
    member: str | None = None


class PgpoolProcesses(Frozen):
    """SHOW pool_processes in counts: children, those serving a client, clients handled."""

    children: int = 0
    busy: int = 0  # not "Wait for connection"


class PgpoolState(Frozen):
    """One pgpool-II read in one cycle, or why it could not be."""

    name: str
    target: str
    ok: bool = False
    error: str | None = None
    last_ok_at: datetime | None = None
    slow_s: float | None = None
    nodes: tuple[PgpoolNode, ...] = ()
    processes: PgpoolProcesses | None = None
    processes_error: str | None = None  # SHOW pool_processes refused (the role may not read it)


class Finding(Frozen):
    """A contradiction between a pooler and Patroni (or within the pooler), with its level."""

    level: Level
    pooler: str
    what: str  # the finding without the pooler's name (a pane's row already names it)

    @property
    def text(self) -> str:
        """The finding as Problems lists it: the pooler's name first."""
        return f"{self.pooler}: {self.what}"


class PatroniView(Frozen):
    """What Patroni says, as the poolers are checked against it."""

    leader: str | None = None  # None: no single leader known this cycle (nothing is checked)
    members: frozenset[str] = frozenset()
    streaming: frozenset[str] = frozenset()  # replicas Patroni reports streaming/running


def _unread(name: str, error: str | None) -> Finding:
    return Finding(level=Level.WARN, pooler=name, what=error or "no answer yet")


def database_finding(pooler: str, db: BouncerDatabase, patroni: PatroniView) -> Finding | None:
    """A pgBouncer database pointing at a member that is not the leader (or paused, disabled)."""
    leader = patroni.leader
    if db.member is not None and leader is not None and db.member != leader and db.member in patroni.members:
        return Finding(
            level=Level.CRIT,
            pooler=pooler,
            what=f"database {db.name} points at {db.member}, which is not the leader "
            f"({leader}); writes through it fail",
        )
    if db.paused or db.disabled:
        return Finding(
            level=Level.WARN,
            pooler=pooler,
            what=f"database {db.name} is {'paused' if db.paused else 'disabled'}",
        )
    return None


WAIT_CRIT_S = 5.0  # a client waiting this long for a server connection is an outage to it


def pool_finding(pooler: str, pool: BouncerPool) -> Finding | None:
    """Clients of a pool waiting for a server connection (CRIT once the oldest waits 5 s)."""
    if not pool.cl_waiting:
        return None
    wait = pool.maxwait_s or 0.0
    return Finding(
        level=Level.CRIT if wait >= WAIT_CRIT_S else Level.WARN,
        pooler=pooler,
        what=f"{pool.cl_waiting} clients of {pool.database}/{pool.user} wait for a server "
        f"(longest {wait:.1f}s)",
    )


def bouncer_findings(state: PgBouncerState, patroni: PatroniView) -> list[Finding]:
    """What is wrong in one pgBouncer: unread, a database pointing at a non-leader, waiting clients."""
    if not state.ok:
        return [_unread(state.name, state.error)]
    found = [database_finding(state.name, db, patroni) for db in state.databases]
    found += [pool_finding(state.name, pool) for pool in state.pools]
    return [f for f in found if f is not None]


def pgpool_primary(state: PgpoolState) -> PgpoolNode | None:
    """The node pgpool-II calls primary (None when it names none)."""
    return next((n for n in state.nodes if n.role == "primary"), None)


def node_finding(pooler: str, node: PgpoolNode, patroni: PatroniView) -> Finding | None:
    """A pgpool-II node against Patroni: a primary that is not the leader; down while it streams."""
    leader = patroni.leader
    if node.role == "primary" and leader is not None and node.member is not None and node.member != leader:
        return Finding(
            level=Level.CRIT,
            pooler=pooler,
            what=f"primary is {node.member}, Patroni's leader is {leader}; writes go to a replica",
        )
    if node.status in ("down", "unused") and node.member is not None and node.member in patroni.streaming:
        return Finding(
            level=Level.WARN,
            pooler=pooler,
            what=f"node {node.node_id} ({node.member}) is {node.status} in pgpool while "
            "Patroni says it streams; no reads go there",
        )
    return None


def missing_primary(state: PgpoolState, patroni: PatroniView) -> Finding | None:
    """pgpool-II names no primary while Patroni has a leader: writes through it fail."""
    if not state.ok or patroni.leader is None or not state.nodes or pgpool_primary(state) is not None:
        return None
    return Finding(
        level=Level.CRIT, pooler=state.name, what=f"no primary, Patroni's leader is {patroni.leader}"
    )


def pgpool_findings(state: PgpoolState, patroni: PatroniView) -> list[Finding]:
    """pgpool-II against Patroni: unread, no primary while Patroni has a leader, each node's finding."""
    if not state.ok:
        return [_unread(state.name, state.error)]
    found = [missing_primary(state, patroni), *(node_finding(state.name, n, patroni) for n in state.nodes)]
    return [f for f in found if f is not None]
