"""Runs statistics resets on their own PostgreSQL connections (never the read path's)."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Sequence
from typing import Any

import asyncpg

from pgtop_ha.actions.reset_scopes import ResetScope, ResetTarget
from pgtop_ha.actions.results import NodeResult
from pgtop_ha.settings import Settings

APPLICATION_NAME = "pgtop-ha-operator"


def first_line(exc: BaseException) -> str:
    """An error's first line (asyncpg's messages may carry a DETAIL and a HINT below)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


async def close_quietly(conn: Any) -> None:
    """Close an operator connection, or drop it when the server does not answer the goodbye."""
    try:
        await asyncio.wait_for(conn.close(), timeout=2)
    except (TimeoutError, OSError, asyncpg.InterfaceError):
        conn.terminate()


def _ssl(settings: Settings) -> ssl.SSLContext | str | None:
    pg = settings.postgres
    if pg.sslrootcert is not None and pg.sslmode in ("verify-ca", "verify-full"):
        ctx = ssl.create_default_context(cafile=str(pg.sslrootcert))
        ctx.check_hostname = pg.sslmode == "verify-full"
        return ctx
    return pg.sslmode


class StatsResetter:
    """Connects as the operator role to each chosen node and runs one reset function there."""

    def __init__(self, settings: Settings) -> None:
        """Take the role, database, passfile and TLS settings from ``settings``."""
        pg = settings.postgres
        self.user = pg.operator_user or pg.user
        self._dbname = pg.dbname
        self._passfile = pg.passfile
        self._ssl = _ssl(settings)
        self._timeout = pg.connect_timeout
        self._statement_timeout_ms = max(pg.statement_timeout_ms, 5000)

    def who(self) -> str:
        """The operator role, in words."""
        return self.user or "the connecting role"

    async def connect(self, target: ResetTarget) -> Any:
        """An operator connection to ``target`` (statement and lock timeouts set)."""
        kwargs: dict[str, Any] = {
            "host": target.host,
            "port": target.port,
            "database": target.dbname or self._dbname,
            "timeout": self._timeout,
            "server_settings": {
                "application_name": APPLICATION_NAME,
                "statement_timeout": str(self._statement_timeout_ms),
                "lock_timeout": "2000",
            },
        }
        if self.user:
            kwargs["user"] = self.user
        if self._passfile is not None:
            kwargs["passfile"] = str(self._passfile)
        if self._ssl is not None:
            kwargs["ssl"] = self._ssl
        return await asyncpg.connect(**kwargs)

    async def reset_one(self, scope: ResetScope, target: ResetTarget) -> NodeResult:
        """Run ``scope``'s function on ``target``; every failure becomes a one-line message."""
        started = time.monotonic()

        def done(ok: bool, message: str) -> NodeResult:
            return NodeResult(
                node=target.name, ok=ok, message=message, duration_s=round(time.monotonic() - started, 3)
            )

        where = f"{target.name} ({target.host}:{target.port})"
        try:
            conn = await self.connect(target)
        except asyncpg.InvalidAuthorizationSpecificationError as exc:
            return done(
                False,
                f"{where}: {first_line(exc)}; check postgres.operator_user and its password in the passfile",
            )
        except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
            return done(False, f"{where}: cannot connect: {first_line(exc)}")
        try:
            why = scope.unsupported(conn.get_server_version().major * 10000)
            if why is not None:
                return done(False, f"{target.name}: {why}")
            if scope.kind == "slot":
                kind = await conn.fetchval(
                    "SELECT slot_type FROM pg_replication_slots WHERE slot_name = $1", scope.slot_name
                )
                if kind is None:
                    return done(False, f"{target.name}: slot {scope.slot_name} does not exist here")
            sql, args = scope.statement
            await conn.execute(sql, *args)
        except asyncpg.InsufficientPrivilegeError:
            who = self.who()
            return done(
                False,
                f"{who} may not run {scope.function_name}: GRANT EXECUTE ON "
                f"FUNCTION {scope.signature} TO {who}, or use a superuser",
            )
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            return done(False, f"{target.name}: {scope.call} failed: {first_line(exc)}")
        finally:
            await close_quietly(conn)
        return done(True, f"{target.name}: {scope.call} done")

    async def reset(self, scope: ResetScope, targets: Sequence[ResetTarget]) -> list[NodeResult]:
        """Run ``scope`` on every target concurrently; one result per target, in order."""
        return list(await asyncio.gather(*(self.reset_one(scope, t) for t in targets)))
