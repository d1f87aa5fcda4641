"""The write probe: one tiny INSERT per cycle through the writer endpoint (operator mode only).

It times the real write outage (first failed write to first success, and who took it). It lives in
actions/, the only write path, so in read-only mode it is never imported; the poller runs it every
cycle like a read probe and its figures arrive in ClusterSnapshot.probes with kind "write".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg

from pgtop_ha.clock import Clock
from pgtop_ha.collect.membership import refusal
from pgtop_ha.collect.postgres import Target, describe_error
from pgtop_ha.collect.probe import Answer, ProbeRunner, ask, connect_kwargs
from pgtop_ha.errors import ConfigError
from pgtop_ha.models.trust import HostPolicy
from pgtop_ha.settings import ProbeEndpoint, Settings

KIND = "write"


def write_sql(table: str) -> str:
    """The probe's one statement: the INSERT and who took it, in one round trip.

    ``table`` is checked by settings (plain identifiers, optionally schema-qualified), so it can
    be placed in the statement as written.
    """
    return (
        f"with w as (insert into {table} default values returning 1) "
        "select host(inet_server_addr()), inet_server_port(), pg_is_in_recovery(), (select count(*) from w)"
    )


def writer_endpoint(settings: Settings) -> ProbeEndpoint:
    """The endpoint writes go through: the first of kind writer; ConfigError when none is listed."""
    found = next((e for e in settings.probes.endpoints if e.kind == "writer"), None)
    if found is None:
        raise ConfigError(
            '--probe-writes needs a writer endpoint; add [[probes.endpoints]] with kind = "writer" '
            "(HAProxy's writer port) to the config"
        )
    return found


def describer(table: str, target: Target) -> Callable[[BaseException], str]:
    """One-line reasons, naming the table when it is the table's fault."""

    def describe(exc: BaseException) -> str:
        where = f"{target.host}:{target.port}"
        if isinstance(exc, asyncpg.UndefinedTableError):
            return (
                f"{where}: table {table} does not exist; create it "
                f"(create table {table} (at timestamptz default now())) or fix --probe-writes"
            )
        if isinstance(exc, asyncpg.NotNullViolationError):
            return f"{where}: table {table} has a NOT NULL column without a default; give it one"
        if isinstance(exc, asyncpg.InsufficientPrivilegeError):
            return f"{where}: no INSERT privilege on {table}; grant it to postgres.operator_user"
        if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
            return f"{where}: write refused, the server is read-only (a replica or a demoted primary)"
        return describe_error(exc, target)

    return describe


def build_write_probe(settings: Settings, clock: Clock, table: str | None = None) -> ProbeRunner:
    """The write probe through the writer endpoint into ``table`` (default probes.write_table)."""
    table = table or settings.probes.write_table
    if table is None:
        raise ConfigError("the write probe needs a table; give --probe-writes TABLE or probes.write_table")
    endpoint = writer_endpoint(settings)
    pg = settings.postgres
    timeout = settings.probes.timeout
    target = Target(endpoint.name, endpoint.host, endpoint.port, endpoint.dbname or pg.dbname)
    why = refusal(HostPolicy.of(pg.allowed_hosts), endpoint.host, "postgres")
    session = {
        "application_name": "pgtop-ha write probe",
        "statement_timeout": str(min(pg.statement_timeout_ms, int(timeout * 1000))),
        "lock_timeout": str(min(pg.statement_timeout_ms, 500)),
        "jit": "off",
    }
    sql = write_sql(table)

    async def attempt() -> Answer:
        kwargs = connect_kwargs(pg, target, timeout, user=pg.operator_user or pg.user, session=session)
        return await ask(kwargs, pg.allow_cleartext_password, sql)

    run: Callable[[], Awaitable[Answer]] | None = None if why is not None else attempt
    return ProbeRunner(
        target.name,
        KIND,
        endpoint.host,
        endpoint.port,
        run,
        timeout,
        clock,
        refusal=why,
        describe=describer(table, target),
    )
