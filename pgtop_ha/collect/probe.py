"""Client probes, read path: what an application sees through HAProxy's ports or a pooler.

Each probe is a new connection and one statement asking which server answered, as applications
do after a failover: every cycle while unsettled, else every probes.calm_interval (a SCRAM
handshake each), on schedule even while one hangs (MAX_IN_FLIGHT), under the readers' trust rules.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pgtop_ha import pgguard
from pgtop_ha.clock import Clock
from pgtop_ha.collect.postgres import Target, describe_error, server_settings, tls_dsn
from pgtop_ha.models.probe import ProbeRun, answered_label, step
from pgtop_ha.models.snapshot import Probe
from pgtop_ha.models.sources import UNSETTLED_S
from pgtop_ha.models.text import clean, one_line
from pgtop_ha.settings import PostgresSettings, ProbeEndpoint

READ_SQL = "select host(inet_server_addr()), inet_server_port(), pg_is_in_recovery()"
CLOSE_S = 0.5  # a polite close; a server that does not answer it is cut off


@dataclass(frozen=True)
class Answer:
    """Who answered a probe and how long connect + statement took."""

    addr: str | None
    port: int | None
    in_recovery: bool | None
    latency_s: float


Locate = Callable[[str | None, int | None], str | None]


def connect_kwargs(
    pg: PostgresSettings,
    target: Target,
    timeout: float,
    *,
    user: str | None,
    session: Mapping[str, str],
) -> dict[str, Any]:
    """asyncpg.connect arguments for one probe (passwords only from the passfile / libpq env)."""
    kwargs: dict[str, Any] = {
        "host": target.host,
        "port": target.port,
        "database": target.dbname,
        "timeout": timeout,
        "server_settings": dict(session),
        "statement_cache_size": 0,  # one statement per connection: nothing to cache
    }
    dsn = tls_dsn(pg)
    if dsn is not None:
        kwargs["dsn"] = dsn
    if user is not None:
        kwargs["user"] = user
    if pg.passfile is not None:
        kwargs["passfile"] = str(pg.passfile)
    return kwargs


async def ask(kwargs: dict[str, Any], allow_cleartext: bool, sql: str) -> Answer:
    """Connect, run ``sql`` (returning address, port, in_recovery), close; the whole time taken."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    conn = await pgguard.connect(allow_cleartext=allow_cleartext, **kwargs)
    try:
        row = await conn.fetchrow(sql)
        latency = loop.time() - started
    except BaseException:
        conn.terminate()
        raise
    try:
        await asyncio.wait_for(conn.close(), CLOSE_S)
    except BaseException as exc:  # the answer is in; a close that fails only leaves a socket to cut
        conn.terminate()
        if not isinstance(exc, Exception):
            raise
    addr = row[0] if row is not None and isinstance(row[0], str) else None
    port = row[1] if row is not None and isinstance(row[1], int) and not isinstance(row[1], bool) else None
    rec = row[2] if row is not None and isinstance(row[2], bool) else None
    return Answer(clean(addr)[:64] if addr else None, port, rec, latency)


def read_attempt(
    endpoint: ProbeEndpoint, pg: PostgresSettings, timeout: float
) -> Callable[[], Awaitable[Answer]]:
    """The read probe for ``endpoint``: a read-only session, READ_SQL."""
    target = Target(endpoint.name, endpoint.host, endpoint.port, endpoint.dbname or pg.dbname)
    session = server_settings(pg)
    session["statement_timeout"] = str(min(pg.statement_timeout_ms, int(timeout * 1000)))
    if endpoint.kind == "pooler":
        # A stock pgBouncer refuses startup parameters it does not know ("unsupported startup
        # parameter"), and a SET would outlive the transaction on a pooled server connection.
        # The statement is a fixed SELECT and the probe has its own time limit: the name is enough.
        session = {"application_name": session["application_name"]}

    async def attempt() -> Answer:
        kwargs = connect_kwargs(pg, target, timeout, user=pg.user, session=session)
        return await ask(kwargs, pg.allow_cleartext_password, READ_SQL)

    return attempt


# Attempts in flight at once: a new one starts on schedule while an earlier one hangs (a connect
# HAProxy holds while it retries a server going down), as a client's next request would.
MAX_IN_FLIGHT = 3


class ProbeRunner:
    """One endpoint's probe: attempts on schedule (MAX_IN_FLIGHT), its own time limit, its run of errors."""

    def __init__(
        self,
        name: str,
        kind: str,
        host: str,
        port: int,
        attempt: Callable[[], Awaitable[Answer]] | None,
        timeout: float,
        clock: Clock,
        *,
        refusal: str | None = None,
        describe: Callable[[BaseException], str] | None = None,
        calm_interval: float = 0.0,
    ) -> None:
        self.name = name
        self.kind = kind
        self.target = Target(name, host, port, "")
        self._attempt = attempt
        self._timeout = timeout
        self._clock = clock
        self._refusal = refusal
        self._describe = describe or (lambda exc: describe_error(exc, self.target))
        # In flight: the loop's time each began, and the clock's (what orders their results).
        self._tasks: dict[asyncio.Task[None], tuple[float, datetime]] = {}
        self._applied: datetime | None = None  # when the newest attempt whose result counted began
        self._run = ProbeRun()
        self._answer: Answer | None = None
        self._error: str | None = None if refusal is None else refusal
        self._polled = False
        self.locate: Locate = lambda _addr, _port: None
        # Set by the poller: True while the cluster is restless (probe every cycle then).
        self.restless: Callable[[], bool] = lambda: False
        self.attempts = 0
        self._calm_interval = calm_interval  # 0: every cycle
        self._last_start: datetime | None = None
        self._unsettled_until: datetime | None = None
        self._last_who: tuple[str | None, bool | None] = (None, None)

    def start(self) -> asyncio.Task[None] | None:
        """A new attempt when one is due, else the newest in flight (None: none, or refused)."""
        if self._attempt is None or self._refusal is not None:
            return None
        self._tasks = {t: at for t, at in self._tasks.items() if not t.done()}
        newest = next(reversed(self._tasks), None)
        if not self._due() or len(self._tasks) >= MAX_IN_FLIGHT:
            return newest
        began = self._last_start = self._clock()
        task = asyncio.create_task(self._poll(began), name=f"probe:{self.name}")
        self._tasks[task] = (asyncio.get_running_loop().time(), began)
        return task

    def _running_for(self) -> float | None:
        """Seconds the oldest attempt that could still change what is known has waited; None: none."""
        now = asyncio.get_running_loop().time()
        applied = self._applied
        waiting = [
            now - at
            for t, (at, began) in self._tasks.items()
            if not t.done() and (applied is None or began >= applied)
        ]
        return max(waiting) if waiting else None

    def _due(self) -> bool:
        """Whether a new probe should start now (see the module docstring)."""
        if self._calm_interval <= 0 or self._last_start is None or self._error is not None:
            return True
        now = self._clock()
        if self._unsettled_until is not None and now < self._unsettled_until:
            return True
        if self.restless():
            return True
        # A small slack so a 5 s calm interval at a 1 s cadence probes every 5th cycle, not 6th.
        return (now - self._last_start).total_seconds() >= self._calm_interval - 0.2

    def _counts(self, began: datetime) -> bool:
        """Whether an attempt's result counts: none begun after it has counted yet."""
        if self._applied is not None and began < self._applied:
            return False  # an older attempt ending late (a hung connect): a newer one already told
        self._applied = began
        return True

    async def _poll(self, began: datetime) -> None:
        assert self._attempt is not None
        self.attempts += 1
        # A failed write counts from when it was tried (a timeout ends seconds later); a
        # success from when it was answered: the outage is never shorter than it was.
        try:
            async with asyncio.timeout(self._timeout):
                answer = await self._attempt()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed probe is data (the outage itself), never a crash
            if not self._counts(began):
                return
            self._polled = True
            self._error = one_line(self._describe(exc))
            self._run = step(self._run, began, self._error)
            self._unsettled_until = self._clock() + timedelta(seconds=UNSETTLED_S)
            return
        if not self._counts(began):
            return
        self._polled = True
        self._answer = answer
        self._error = None
        now = self._clock()
        member = self.locate(answer.addr, answer.port)
        # A writer answered by another server, or any endpoint by another role: routing moved.
        # (A reader pool answered by a different replica each time is normal round-robin.)
        # None (not known yet, e.g. before the first member list) is not a change.
        who = (member if self.kind in ("writer", "write") else None, answer.in_recovery)
        if any(a is not None and b is not None and a != b for a, b in zip(who, self._last_who, strict=True)):
            self._unsettled_until = now + timedelta(seconds=UNSETTLED_S)
        self._last_who = (who[0] or self._last_who[0], who[1] if who[1] is not None else self._last_who[1])
        self._run = step(self._run, now, None, member)

    def probe(self) -> Probe:
        """This endpoint's figures now (a probe still running is reported as slow)."""
        run = self._run
        answer = self._answer
        error = self._error
        if not self._polled and error is None:
            error = "not probed yet"
        waited = self._running_for()
        ok = self._polled and error is None
        member = self.locate(answer.addr, answer.port) if answer is not None and ok else None
        return Probe(
            endpoint=self.name,
            kind=self.kind,
            target=f"{self.target.host}:{self.target.port}",
            ok=ok,
            answered_by=answered_label(member, answer.addr, answer.port) if answer and ok else None,
            in_recovery=answer.in_recovery if answer and ok else None,
            latency_ms=round(answer.latency_s * 1000, 3) if answer and ok else None,
            error=error,
            errors=run.errors,
            first_error=run.first_error,
            first_error_at=run.first_error_at,
            last_ok_at=run.last_ok_at,
            slow_s=waited,
            outages=run.outages,
        )

    async def aclose(self) -> None:
        """Cancel the attempts in flight."""
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


def read_runner(
    endpoint: ProbeEndpoint,
    pg: PostgresSettings,
    timeout: float,
    clock: Clock,
    refusal: str | None,
    *,
    calm_interval: float = 0.0,
) -> ProbeRunner:
    """The read probe of one configured endpoint (``refusal``: why its host is not contacted)."""
    attempt = None if refusal is not None else read_attempt(endpoint, pg, timeout)
    return ProbeRunner(
        endpoint.name,
        endpoint.kind,
        endpoint.host,
        endpoint.port,
        attempt,
        timeout,
        clock,
        refusal=refusal,
        calm_interval=calm_interval,
    )
