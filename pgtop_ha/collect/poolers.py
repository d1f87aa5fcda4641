"""pgBouncer's admin console and pgpool-II's SHOW commands, read path (collect/wire.py's client).

Each pooler is a Source over one connection kept open, reconnected once within a read when the
pooler closed it (pgpool-II after a failover). Commands are fixed text; every value is checked here.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pgtop_ha.clock import Clock
from pgtop_ha.collect import wire
from pgtop_ha.collect.coerce import as_int
from pgtop_ha.collect.source import Source
from pgtop_ha.models.numbers import finite
from pgtop_ha.models.poolers import (
    BouncerDatabase,
    BouncerPool,
    BouncerStats,
    PgBouncerState,
    PgpoolNode,
    PgpoolProcesses,
    PgpoolState,
)
from pgtop_ha.models.text import clean, one_line
from pgtop_ha.settings import PgBouncerSettings, PgpoolSettings, PostgresSettings

T = TypeVar("T")
Locate = Callable[[str | None, int | None], str | None]
_FLOAT = re.compile(r"[+-]?[0-9]{1,12}(\.[0-9]{1,12})?")
IDLE_STATUS = "Wait for connection"  # pgpool-II's word for a child with no client


def _text(value: str | None, limit: int = 64) -> str | None:
    return None if value is None else clean(value).strip()[:limit]


def _int(value: str | None) -> int | None:
    return as_int(value) if value is not None else None


def _float(value: str | None) -> float | None:
    if value is None or not _FLOAT.fullmatch(value.strip()):
        return None
    return finite(float(value))


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "t", "on", "yes")


# -- pgBouncer ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BouncerReading:
    """SHOW POOLS, DATABASES and STATS parsed."""

    pools: tuple[BouncerPool, ...]
    databases: tuple[BouncerDatabase, ...]
    stats: tuple[BouncerStats, ...]
    truncated: bool


def parse_pools(result: wire.Result) -> tuple[BouncerPool, ...]:
    """SHOW POOLS rows (maxwait in seconds, from maxwait + maxwait_us)."""
    out = []
    for row in result.dicts():
        wait = _int(row.get("maxwait"))
        wait_us = _int(row.get("maxwait_us")) or 0
        out.append(
            BouncerPool(
                database=_text(row.get("database")) or "?",
                user=_text(row.get("user")) or "?",
                cl_active=_int(row.get("cl_active")),
                cl_waiting=_int(row.get("cl_waiting")),
                sv_active=_int(row.get("sv_active")),
                sv_idle=_int(row.get("sv_idle")),
                sv_used=_int(row.get("sv_used")),
                maxwait_s=None if wait is None else wait + wait_us / 1e6,
                pool_mode=_text(row.get("pool_mode"), 16),
            )
        )
    return tuple(out)


def parse_databases(result: wire.Result) -> tuple[BouncerDatabase, ...]:
    """SHOW DATABASES rows (the admin console's own row has no host and is kept as is)."""
    return tuple(
        BouncerDatabase(
            name=_text(row.get("name")) or "?",
            host=_text(row.get("host"), 255) or None,
            port=_int(row.get("port")),
            database=_text(row.get("database")),
            pool_size=_int(row.get("pool_size")),
            current_connections=_int(row.get("current_connections")),
            paused=_flag(row.get("paused")),
            disabled=_flag(row.get("disabled")),
        )
        for row in result.dicts()
    )


def parse_stats(result: wire.Result) -> tuple[BouncerStats, ...]:
    """SHOW STATS rows: the running totals (rates come from two reads, models/derive.py)."""
    return tuple(
        BouncerStats(
            database=_text(row.get("database")) or "?",
            xacts=_int(row.get("total_xact_count")),
            queries=_int(row.get("total_query_count")),
            received_bytes=_int(row.get("total_received")),
            sent_bytes=_int(row.get("total_sent")),
            wait_us=_int(row.get("total_wait_time")),
        )
        for row in result.dicts()
    )


async def read_bouncer(conn: wire.Connection) -> BouncerReading:
    """The three SHOW commands on one admin-console connection, sent in one write."""
    answers = await conn.queries(("SHOW POOLS", "SHOW DATABASES", "SHOW STATS"))
    pools, databases, stats = (wire.unwrap(answer) for answer in answers)
    truncated = pools.truncated or databases.truncated or stats.truncated
    return BouncerReading(parse_pools(pools), parse_databases(databases), parse_stats(stats), truncated)


# -- pgpool-II ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PgpoolReading:
    """SHOW pool_nodes parsed, and SHOW pool_processes counted (or why not)."""

    nodes: tuple[PgpoolNode, ...]
    processes: PgpoolProcesses | None
    processes_error: str | None


def parse_pool_nodes(result: wire.Result) -> tuple[PgpoolNode, ...]:
    """SHOW pool_nodes rows (4.x columns; those an older pgpool lacks stay None)."""
    out = []
    for row in result.dicts():
        node_id = _int(row.get("node_id"))
        if node_id is None:
            continue
        out.append(
            PgpoolNode(
                node_id=node_id,
                host=_text(row.get("hostname"), 255),
                port=_int(row.get("port")),
                status=_text(row.get("status"), 16),
                pg_status=_text(row.get("pg_status"), 16),
                lb_weight=_float(row.get("lb_weight")),
                role=_text(row.get("role"), 16),
                pg_role=_text(row.get("pg_role"), 16),
                select_cnt=_int(row.get("select_cnt")),
                load_balance_node=_flag(row.get("load_balance_node"))
                if row.get("load_balance_node")
                else None,
                replication_delay=_int(row.get("replication_delay")),
                replication_state=_text(row.get("replication_state"), 16) or None,
                sync_state=_text(row.get("replication_sync_state"), 16) or None,
                last_status_change=_text(row.get("last_status_change"), 32),
            )
        )
    return tuple(out)


def count_processes(result: wire.Result) -> PgpoolProcesses:
    """SHOW pool_processes as counts: children and those busy with a client."""
    rows = result.dicts()
    busy = sum(1 for r in rows if (r.get("status") or "").strip() not in ("", IDLE_STATUS))
    return PgpoolProcesses(children=len(rows), busy=busy)


async def read_pgpool(conn: wire.Connection) -> PgpoolReading:
    """SHOW pool_nodes and SHOW pool_processes in one write (the second's refusal is kept, not fatal)."""
    listed, counted = await conn.queries(("SHOW pool_nodes", "SHOW pool_processes"))
    nodes = parse_pool_nodes(wire.unwrap(listed))
    if isinstance(counted, wire.ServerError):
        return PgpoolReading(nodes, None, one_line(str(counted)))
    return PgpoolReading(nodes, count_processes(counted), None)


# -- the reader both share ------------------------------------------------------------------------


BOUNCER_ROLE = "a role in pgBouncer's auth_file and stats_users"
PGPOOL_ROLE = "a role in pgpool-II's pool_passwd and pool_hba.conf"


def describe(exc: BaseException, where: str, user: str, role: str) -> str:
    """One line naming the pooler and what went wrong (never a password); ``role``: what it needs."""
    if isinstance(exc, TimeoutError):
        return f"{where}: no answer (timeout)"
    text = one_line(str(exc))
    if isinstance(exc, wire.AuthError) or (isinstance(exc, wire.ServerError) and "auth" in text.lower()):
        return (
            f"{where}: authentication failed for {user} ({text}); the user must be {role}, "
            "its password in ~/.pgpass or PGPASSFILE"
        )
    if isinstance(exc, wire.ServerError) and "not allowed" in text.lower():
        return f"{where}: {user} is not allowed ({text}); the user must be {role}"
    if isinstance(exc, wire.WireError):
        return f"{where}: {text}"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where}: connection refused (is the pooler running?)"
    if isinstance(exc, asyncio.IncompleteReadError):
        return f"{where}: the pooler closed the connection"
    if isinstance(exc, OSError):
        return f"{where}: {exc.strerror or exc}"
    return f"{where}: {exc.__class__.__name__}: {text}"


class PoolerReader(Generic[T]):
    """One pooler: a kept connection, its commands, a Source for timing; a refused host is never asked."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        login: wire.Login,
        timeout: float,
        clock: Clock,
        read: Callable[[wire.Connection], Awaitable[T]],
        refusal: str | None = None,
        role: str = BOUNCER_ROLE,
    ) -> None:
        self.name = name
        self.host = host
        self.port = port
        self.target = f"{host}:{port}"
        self._login = login
        self._read = read
        self._conn: wire.Connection | None = None
        self.connects = 0
        where = f"{name} {self.target}"
        self.source: Source[T] = Source(
            name, self._fetch, timeout, clock, lambda exc: describe(exc, where, login.user, role)
        )
        self.refused = None if refusal is None else f"{where}: {refusal}"

    def start(self) -> asyncio.Task[None] | None:
        """The running read, or a new one (None when the host is not allowed)."""
        return None if self.refused is not None else self.source.start()

    async def _connect(self) -> wire.Connection:
        self.connects += 1
        self._conn = await wire.connect(self.host, self.port, self._login)
        return self._conn

    async def _fetch(self) -> T:
        fresh = self._conn is None
        conn = self._conn or await self._connect()
        try:
            return await self._read(conn)
        except wire.ServerError:
            raise  # the pooler refused a command: the session itself is fine
        except BaseException as exc:
            self._drop()  # a time limit or a broken connection: never reuse it
            if fresh or not isinstance(exc, OSError | asyncio.IncompleteReadError | wire.WireError):
                raise
        # The kept connection was closed by the pooler (a restart, a failover): once more, new.
        conn = await self._connect()
        try:
            return await self._read(conn)
        except wire.ServerError:
            raise
        except BaseException:
            self._drop()
            raise

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.abort()
            self._conn = None

    async def aclose(self) -> None:
        """Stop a read in flight and close the connection."""
        await self.source.aclose()
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


def _login(settings: PgBouncerSettings | PgpoolSettings, pg: PostgresSettings, dbname: str) -> wire.Login:
    return wire.login_for(
        settings.user or pg.user,
        dbname,
        sslmode=pg.sslmode,
        sslrootcert=pg.sslrootcert,
        passfile=pg.passfile,
        allow_cleartext=pg.allow_cleartext_password,
    )


def bouncer_reader(
    s: PgBouncerSettings, pg: PostgresSettings, clock: Clock, refusal: str | None
) -> PoolerReader[BouncerReading]:
    """The reader of one [[pgbouncer]] entry."""
    return PoolerReader(
        s.name, s.host, s.port, _login(s, pg, s.dbname), s.timeout, clock, read_bouncer, refusal
    )


def pgpool_reader(
    s: PgpoolSettings, pg: PostgresSettings, clock: Clock, refusal: str | None
) -> PoolerReader[PgpoolReading]:
    """The reader of one [[pgpool]] entry."""
    login = _login(s, pg, s.dbname or pg.dbname)
    return PoolerReader(s.name, s.host, s.port, login, s.timeout, clock, read_pgpool, refusal, PGPOOL_ROLE)


def _common(reader: PoolerReader[Any]) -> tuple[dict[str, Any], Any]:
    """What every pooler state carries (name, target, ok, error, times), and the parsed value."""
    if reader.refused is not None:
        return {"name": reader.name, "target": reader.target, "error": reader.refused}, None
    r = reader.source.reading()
    fields = {
        "name": reader.name,
        "target": reader.target,
        "ok": r.error is None and r.value is not None,
        "error": r.error,
        "last_ok_at": r.last_ok_at,
        "slow_s": r.slow_s,
    }
    return fields, r.value


def bouncer_state(reader: PoolerReader[BouncerReading], locate: Locate) -> PgBouncerState:
    """This cycle's PgBouncerState (databases matched to members by address and port)."""
    fields, value = _common(reader)
    if not isinstance(value, BouncerReading):
        return PgBouncerState(**fields)
    databases = tuple(
        d.model_copy(update={"member": locate(d.host, d.port)}) if d.host else d for d in value.databases
    )
    return PgBouncerState(
        **fields, pools=value.pools, databases=databases, stats=value.stats, truncated=value.truncated
    )


def pgpool_state(reader: PoolerReader[PgpoolReading], locate: Locate) -> PgpoolState:
    """This cycle's PgpoolState (nodes matched to members by address and port)."""
    fields, value = _common(reader)
    if not isinstance(value, PgpoolReading):
        return PgpoolState(**fields)
    nodes = tuple(n.model_copy(update={"member": locate(n.host, n.port)}) for n in value.nodes)
    return PgpoolState(
        **fields, nodes=nodes, processes=value.processes, processes_error=value.processes_error
    )
