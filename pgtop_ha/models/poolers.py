"""The connection poolers in front of PostgreSQL as read: pgBouncer and pgpool-II (judged in judge/)."""

from __future__ import annotations

from datetime import datetime

from pgtop_ha.models.base import Frozen


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
