"""Cancel a backend's query or terminate the backend, on the operator's own connection.

The backend is looked up again first: one that has gone, or a pid now used by another backend
(its start differs from the one the operator saw), is never signalled.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Literal

import asyncpg

from pgtop_ha.actions.reset_scopes import ResetTarget, reset_targets
from pgtop_ha.actions.results import NodeResult
from pgtop_ha.actions.stats_reset import StatsResetter, close_quietly, first_line
from pgtop_ha.models.base import Frozen
from pgtop_ha.models.snapshot import ClusterSnapshot

SignalKind = Literal["cancel", "terminate"]
"""cancel: pg_cancel_backend (the query stops, the session stays); terminate: pg_terminate_backend."""

# pg_terminate_backend waits this long for the backend to exit, so "terminated" means gone.
TERMINATE_WAIT_MS = 3000

_LOOKUP = """select backend_start, usename, backend_type,
       coalesce((select rolsuper from pg_roles where rolname = a.usename), false) as superuser
from pg_stat_activity a where pid = $1"""


class BackendTarget(Frozen):
    """The backend the operator chose, as the dialog showed it."""

    node: ResetTarget
    pid: int
    backend_start: datetime | None = None  # as last read: a pid reused since is refused
    usename: str | None = None
    application_name: str | None = None
    state: str | None = None
    query: str | None = None
    held_s: float | None = None  # how long it has held its locks (its transaction's age)


def backend_target(snapshot: ClusterSnapshot, node: str, pid: int) -> BackendTarget | None:
    """The backend ``pid`` on ``node`` as the snapshot shows it; None when the node is not reachable."""
    where = next((t for t in reset_targets(snapshot) if t.name == node), None)
    if where is None:
        return None
    seen = next((n for n in snapshot.nodes if n.name == node), None)
    process = next((p for p in (seen.processes if seen else ()) if p.pid == pid), None)
    locked = next((p for p in ((seen.locks or ()) if seen else ()) if p.pid == pid), None)
    shown = process or locked
    held = locked.xact_age_s if locked is not None else (process.xact_s if process is not None else None)
    return BackendTarget(
        node=where,
        pid=pid,
        backend_start=process.backend_start if process is not None else None,
        usename=shown.usename if shown else None,
        application_name=shown.application_name if shown else None,
        state=shown.state if shown else None,
        query=shown.query if shown else None,
        held_s=held,
    )


def statement(kind: SignalKind) -> str:
    """The SQL sent for ``kind`` ($1 is the pid)."""
    if kind == "cancel":
        return "SELECT pg_cancel_backend($1)"
    return f"SELECT pg_terminate_backend($1, {TERMINATE_WAIT_MS})"


async def signal_backend(connector: StatsResetter, kind: SignalKind, target: BackendTarget) -> NodeResult:
    """Send ``kind`` to ``target``'s backend; every outcome is one line naming pid and node."""
    started = time.monotonic()
    node = target.node
    name = f"pid {target.pid} on {node.name}"

    def done(ok: bool, message: str) -> NodeResult:
        return NodeResult(
            node=node.name, ok=ok, message=message, duration_s=round(time.monotonic() - started, 3)
        )

    try:
        conn = await connector.connect(node)
    except asyncpg.InvalidAuthorizationSpecificationError as exc:
        return done(False, f"{node.name}: {first_line(exc)}; check postgres.operator_user and its password")
    except (TimeoutError, OSError, asyncpg.PostgresError) as exc:
        return done(False, f"{node.name} ({node.host}:{node.port}): cannot connect: {first_line(exc)}")
    row = None
    try:
        row = await conn.fetchrow(_LOOKUP, target.pid)
        if row is None:
            return done(False, f"{name} has already gone; nothing sent")
        # A role without pg_read_all_stats sees another role's backend with its details NULL:
        # what it cannot see it cannot check (pg_signal_backend still applies).
        began = row["backend_start"]
        if target.backend_start is not None and began is not None and began != target.backend_start:
            return done(False, f"{name} is now another backend (a new session took the pid); nothing sent")
        if row["backend_type"] not in ("client backend", None):
            return done(False, f"{name} is a {row['backend_type']}, not a client session; nothing sent")
        sent = await conn.fetchval(statement(kind), target.pid)
    except asyncpg.InsufficientPrivilegeError as exc:
        who = connector.who()
        hint = (
            "a superuser's backend takes a superuser"
            if row and row["superuser"]
            else "grant pg_signal_backend"
        )
        return done(False, f"{who} may not signal {name}: {first_line(exc)}; {hint}")
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        return done(False, f"{name}: {kind} failed: {first_line(exc)}")
    finally:
        await close_quietly(conn)
    if not sent:
        if kind == "terminate":
            return done(False, f"{name} was sent SIGTERM but had not exited after {TERMINATE_WAIT_MS} ms")
        return done(False, f"{name} could not be signalled (it may have just ended)")
    if kind == "cancel":
        return done(True, f"{name}: its query was cancelled (the session stays)")
    return done(True, f"{name} was terminated")
