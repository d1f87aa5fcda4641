"""PostgreSQL's view of one node: one asyncpg connection, one statement per cycle.

Sessions are read-only, named pgtop-ha and bounded (statement_timeout, lock_timeout). Passwords
come only from libpq's conventions, and none goes in clear text without TLS (pgtop_ha.pgguard).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

import asyncpg
from pydantic import ValidationError

from pgtop_ha import pgguard
from pgtop_ha.clock import Clock
from pgtop_ha.collect import procmem
from pgtop_ha.collect.certificate import not_after
from pgtop_ha.collect.document import HugePagesSetting, read_document
from pgtop_ha.collect.errors import ParseError
from pgtop_ha.collect.pgquery import (
    CALM_PARTS,
    PROBE_SQL,
    Capabilities,
    build_query,
    cache_query,
    statements_queries,
    unavailable,
    wal_disk_query,
)
from pgtop_ha.collect.serverlog import LOCATE_SQL, LOG_REFRESH_S, LogTail
from pgtop_ha.collect.source import PollTask
from pgtop_ha.collect.statements import STATEMENTS_REFRESH_S, StatementsReader
from pgtop_ha.models import derive
from pgtop_ha.models.needs import Needs
from pgtop_ha.models.serverlog import LogLine, ServerLog
from pgtop_ha.models.snapshot import (
    CacheState,
    HugePages,
    NodeReadings,
    NodeSnapshot,
    PendingSetting,
    Process,
    Setting,
    WalDisk,
)
from pgtop_ha.models.sources import SLOW_S
from pgtop_ha.models.statements import BETWEEN_READS
from pgtop_ha.models.text import clean, one_line
from pgtop_ha.models.waits import wait_counts
from pgtop_ha.settings import PostgresSettings

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 10.0
# A server that answered before and has just failed is asked again every cycle for this long
# before backing off: a crashed primary restarted in place serves writes again within seconds.
QUICK_RETRY_S = 30.0
REFRESH_S = 5.0  # process memory is read this often while the Memory pane is shown alone
DASHBOARD_REFRESH_S = 15.0  # ... and this often while it is one pane of several
# Pending restarts are re-read when pg_conf_load_time() changes, and at least this often anyway.
PENDING_REFRESH_S = 60.0
# The calm parts (pgquery.CALM_PARTS: the horizon, open transactions, the archiver, subscriptions)
# are read this often and kept between: their verdicts count in minutes, and each costs the server
# as much as the roles and positions read every cycle.
CALM_REFRESH_S = 5.0
# pg_wal's size: listing the directory costs more with every file a slot retains, and it moves
# no faster than a DBA reads it.
WAL_REFRESH_S = 10.0
T = TypeVar("T")
CACHE_REFRESH_S = 15.0  # pg_buffercache while the Cache pane is on screen (it visits every buffer)
_PROCESS_FIELDS = tuple(Process.model_fields)
_READINGS = tuple(NodeReadings.model_fields)  # what the document hands to NodeSnapshot as is


@dataclass(frozen=True)
class Target:
    """Where one node's PostgreSQL listens."""

    name: str
    host: str
    port: int
    dbname: str


def _memory_from_texts(smaps: str | None, status: str | None) -> procmem.Memory | None:
    if not smaps:
        return None
    try:
        rollup = procmem.parse_smaps_rollup(smaps)
    except ParseError:
        return None
    stat = None
    if status is not None:
        try:
            stat = procmem.parse_status(status)
        except ParseError:
            stat = None
    return procmem.merge(rollup, stat)


def _with_memory(proc: Process, mem: procmem.Memory | None) -> Process:
    if mem is None:
        return proc
    return proc.model_copy(
        update={
            "pss_bytes": mem.pss,
            "uss_bytes": mem.uss,
            "rss_bytes": mem.rss,
            "pagetable_bytes": mem.pagetable,
            "swap_bytes": mem.swap,
        }
    )


@dataclass
class Parsed:
    """A node's document turned into model parts, before /proc memory is attached."""

    fields: dict[str, Any]
    processes: list[Process]
    remote_memory: dict[int, procmem.Memory] = field(default_factory=dict)
    postmaster: procmem.Memory | None = None
    postmaster_pid: int | None = None
    backend_pid: int | None = None
    conf_load_time: str | None = None
    hugepages: HugePages | None = None
    huge_pages_setting: HugePagesSetting | None = None


def _peer_not_after(conn: asyncpg.Connection) -> datetime | None:
    """The server certificate's end when the connection is TLS (asyncpg keeps its transport private)."""
    transport = getattr(conn, "_transport", None)
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    return not_after(ssl_object.getpeercert(binary_form=True)) if ssl_object is not None else None


def parse_document(text: str, caps: Capabilities) -> Parsed:
    """The single statement's JSON document as model parts; ParseError if it is not one."""
    doc = read_document(text)  # the whole shape, strictly typed (collect/document.py)
    reference = derive.wal_position(doc.in_recovery, doc.current_lsn, doc.replay_lsn, doc.receive_lsn)
    # What is derived from the readings (lags, retained WAL, COPY estimates, segments behind).
    slots = tuple(
        s.model_copy(update={"retained_bytes": derive.lag_bytes(reference, s.restart_lsn)}) for s in doc.slots
    )
    copies = []
    for copy in doc.copy_progress:
        est = derive.copy_estimate(copy)
        copies.append(
            copy.model_copy(
                update={"percent": est.percent, "estimated_total_bytes": est.estimated_total_bytes}
            )
        )
    archiver = doc.archiver
    if archiver is not None and (not doc.in_recovery or archiver.archive_mode == "always"):
        behind = derive.segments_behind(reference, archiver.last_archived_wal, caps.wal_segment_size)
        archiver = archiver.model_copy(update={"segments_behind": behind})
    fields: dict[str, Any] = {name: getattr(doc, name) for name in _READINGS}
    fields.update(
        replication=tuple(derive.with_lag(r, doc.current_lsn) for r in doc.replication),
        slots=slots,
        copy_progress=tuple(copies),
        archiver=archiver,
    )
    if "pending_restart" not in doc.model_fields_set:
        del fields["pending_restart"]  # not asked this cycle: the reader keeps what it last read
    processes: list[Process] = []
    remote: dict[int, procmem.Memory] = {}
    for row in doc.processes:
        mem = _memory_from_texts(row.smaps, row.status)
        if mem is not None:
            remote[row.pid] = mem
        if row.smaps is None and row.status is None:
            processes.append(row)  # a ProcessRow is a Process; its JSON is the Process fields
        else:
            # Drop the /proc texts (16 KB each) before the row joins the kept history.
            processes.append(Process.model_construct(**{k: getattr(row, k) for k in _PROCESS_FIELDS}))
    fields["waits"] = wait_counts(processes)
    parsed = Parsed(fields=fields, processes=processes, remote_memory=remote)
    parsed.backend_pid = doc.backend_pid
    parsed.conf_load_time = doc.conf_load_time
    post = doc.postmaster
    if post is not None:
        parsed.postmaster_pid = post.pid
        parsed.postmaster = _memory_from_texts(post.smaps, post.status)
        if post.meminfo is not None:
            parsed.hugepages = procmem.parse_hugepages(post.meminfo)
    parsed.huge_pages_setting = doc.huge_pages
    return parsed


def tls_dsn(settings: PostgresSettings) -> str | None:
    """A DSN carrying only sslmode/sslrootcert, the libpq way (asyncpg parses it)."""
    params: dict[str, str] = {}
    if settings.sslmode is not None:
        params["sslmode"] = settings.sslmode
    if settings.sslrootcert is not None:
        params["sslrootcert"] = str(settings.sslrootcert)
    if not params:
        return None
    return "postgresql://?" + urlencode(params)


def server_settings(settings: PostgresSettings) -> dict[str, str]:
    """Session settings of every read connection."""
    statement = settings.statement_timeout_ms
    return {
        "default_transaction_read_only": "on",
        "application_name": "pgtop-ha",
        "statement_timeout": str(statement),
        "lock_timeout": str(min(statement, 500)),
        "idle_in_transaction_session_timeout": str(max(statement * 5, 10000)),
        "jit": "off",
    }


def describe_error(exc: BaseException, target: Target) -> str:
    """One line naming the node and what went wrong (never a password)."""
    where = f"{target.host}:{target.port}"
    if isinstance(exc, TimeoutError):
        return f"{where}: no answer (timeout)"
    if isinstance(exc, pgguard.CleartextRefused):
        return f"{where}: {exc}"
    auth = asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    if isinstance(exc, auth):
        return f"{where}: authentication failed ({exc}); check the role and ~/.pgpass or PGPASSFILE"
    if isinstance(exc, asyncpg.PostgresError):
        return f"{where}: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where}: connection refused (is PostgreSQL running?)"
    if isinstance(exc, OSError):
        return f"{where}: {exc.strerror or exc}"
    if isinstance(exc, ParseError):
        return f"{where}: {exc}"
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, ValueError) and "Postgres version" in text:
        # asyncpg reads server_version as it connects: a proxy or a fork may send what it cannot.
        return f"{where}: {clean(text)[:120]}; is this PostgreSQL (or a proxy that sends its own version)?"
    return f"{where}: {exc.__class__.__name__}{': ' + text if text else ''}"


# Why an optional read's field is null: no pane on screen (or `snapshot --without`) asked for it.
NOT_ASKED = "not read: asked only while its pane is on screen (snapshot reads it unless --without)"


MAX_UNSHOWN_LINES = 2000  # log lines held for the next snapshot taken, at most (the newest)


def _quiet(log: ServerLog) -> ServerLog:
    """The log as read, with no line to tell (they were told already)."""
    return log.model_copy(update={"lines": (), "backlog": False, "skipped_bytes": 0})


class SideRead(Generic[T]):
    """A statement of its own, sent at most every ``every`` seconds, its answer kept in between.

    A failure here (a missing grant, a cancelled statement, a bad answer) is this read's own line
    in ``unavailable``, not the node's: the cycle's document was read.
    """

    def __init__(self, every: float, fetch: Callable[[asyncpg.Connection, str], Awaitable[T]]) -> None:
        self.every = every
        self._fetch = fetch
        self.value: T | None = None
        self.error: str | None = None
        self.fresh = False  # the last refresh sent the statement and the server answered
        self._at: float | None = None

    def clear(self) -> None:
        """Forget the last answer (its pane left the screen)."""
        self.value = self.error = self._at = None
        self.fresh = False

    def due(self) -> None:
        """Send at the next refresh, however recent the last (the answer kept until then)."""
        self._at = None

    async def refresh(self, conn: asyncpg.Connection, sql: str | None, now: float) -> bool:
        """Send ``sql`` when due; True (and ``fresh``) when the server answered (a round trip made)."""
        self.fresh = False
        if sql is None or (self._at is not None and now - self._at < self.every):
            return False
        self._at = now
        try:
            self.value, self.error = await self._fetch(conn, sql), None
        except ValidationError as exc:
            self.value, self.error = None, f"unexpected value: {exc.errors()[0]['msg']}"
        except ParseError as exc:
            self.value, self.error = None, one_line(str(exc))
        except asyncpg.PostgresError as exc:
            self.value, self.error = None, one_line(str(exc))
            return False
        self.fresh = True
        return True


async def _fetch_cache(conn: asyncpg.Connection, sql: str) -> CacheState:
    """pg_buffercache's answer (it visits every buffer: the Cache pane's own, slow statement)."""
    text = await conn.fetchval(sql)
    if not isinstance(text, str):
        raise ParseError("postgres cache: empty answer")
    return CacheState.model_validate_json(text, strict=True)


async def _fetch_wal_disk(conn: asyncpg.Connection, sql: str) -> WalDisk:
    """pg_wal's size and its bounds (listing it costs more with every file a slot retains)."""
    return WalDisk.model_validate(dict(await conn.fetchrow(sql) or {}))


class NodeReader:
    """Polls one node's PostgreSQL: one connection, probed once, reconnected with backoff."""

    def __init__(
        self,
        target: Target,
        settings: PostgresSettings,
        clock: Clock,
        *,
        proc: Path = Path("/proc"),
        local: bool | None = None,
    ) -> None:
        self.target = target
        self._settings = settings
        self._clock = clock
        self._proc = proc
        self._conn: asyncpg.Connection | None = None
        self._caps: Capabilities | None = None
        # The address the server took the last connection on, kept while it is down.
        self.server_addr: str | None = None
        self._sql: str | None = None
        self._sql_calm: str | None = None  # with the calm parts, every CALM_REFRESH_S
        self._sql_pending: str | None = None
        self._sql_full: str | None = None  # remote memory through pg_read_file, when it can
        # Process memory costs ~0.5 ms CPU per smaps_rollup: it is refreshed every REFRESH_S (a
        # "full" cycle, still one round trip); new processes get their memory read at once.
        # memory_enabled=False skips memory. pg_settings costs ~0.7-1 ms of server time and
        # pending restarts only change with a reload: they are read on a new connection, when
        # pg_conf_load_time() moved (the next cycle), and every PENDING_REFRESH_S.
        self._needs: Needs = frozenset({"memory"})
        self._memory: dict[int, tuple[datetime | None, procmem.Memory]] = {}
        self._merged: dict[int, tuple[Process, procmem.Memory, Process]] = {}  # pid: listed, read, shown
        self._last_document: tuple[str, Capabilities, Parsed] | None = None  # text, caps, its parse
        self._huge_view: tuple[HugePages | None, HugePagesSetting, HugePages] | None = None
        self._full_at: float | None = None
        self._pending: tuple[PendingSetting, ...] = ()
        self._settings_read: tuple[Setting, ...] = ()
        self._cache = SideRead(CACHE_REFRESH_S, _fetch_cache)
        self._top = StatementsReader()
        self._statements = SideRead(STATEMENTS_REFRESH_S, self._top)
        self._statements_sql: str | None = None
        self._tail = LogTail()
        self._log = SideRead(LOG_REFRESH_S, self._tail)
        # Log lines read but in no snapshot the poller has taken yet: a poll that ends after its
        # cycle's view is replaced by the next before anyone saw it. Only a poll's end adds to
        # them, so the result the poller takes carries exactly these until it is taken.
        self._log_read: ServerLog | None = None  # the read whose lines were last added
        self._unshown: tuple[LogLine, ...] = ()
        self._unshown_backlog = False
        self._quiet_log: tuple[ServerLog, ServerLog] | None = None  # (read, the same with no line)
        self._wal_disk = SideRead(WAL_REFRESH_S, _fetch_wal_disk)
        self._cert_not_after: datetime | None = None
        self._pending_at: float | None = None
        self._calm_at: float | None = None
        self._calm: dict[str, Any] = {}  # the calm parts as last read
        self._pending_conf: str | None = None  # pg_conf_load_time() when pending was read
        self._conf_load_time: str | None = None  # the latest pg_conf_load_time() seen
        self._postmaster_pid: int | None = None
        self._hugepages: HugePages | None = None
        self._huge_setting: HugePagesSetting | None = None  # read with the pending restarts
        self._source: str | None = None
        # Local nodes' memory comes from this host's /proc; ``local`` overrides the guess.
        self._local = procmem.is_local_host(target.host) if local is None else local
        self._failures = 0
        self._failing_from = 0.0  # the event loop's time of this run of failures' first
        self._retry_at = 0.0
        self._asked_at: datetime | None = None  # when the poll in flight (or the last) was sent
        self._failing_since: datetime | None = None
        # When the server closed the kept connection on its own (a crash, a shutdown): heard at
        # once through asyncpg's termination listener, not at the next poll.
        self._lost_at: datetime | None = None
        self.on_lost: Callable[[], None] | None = None  # told at once (the poller's wake)
        self._runner = PollTask(f"pg:{target.name}", self._poll)
        self._result: NodeSnapshot = NodeSnapshot(
            name=target.name, host=target.host, port=target.port, error="not polled yet"
        )
        self.last_ok_at: datetime | None = None
        self.round_trips = 0
        self.pending_reads = 0  # statements that asked pg_settings for pending restarts
        self.calm_reads = 0  # statements that read the calm parts
        self.connects = 0
        self.last_query_s: float | None = None

    @property
    def memory_refresh_s(self) -> float:
        """Seconds between process-memory reads: REFRESH_S with the Memory pane alone, else slower.

        Reading smaps_rollup is ~0.5-1 ms of kernel time per process: on the dashboard, where
        memory is one pane among several, every 15 s; shown alone (key 7), every 5 s. New
        processes have theirs read at once either way.
        """
        return REFRESH_S if "memory_focus" in self._needs else DASHBOARD_REFRESH_S

    @property
    def memory_enabled(self) -> bool:
        """Whether process memory is read (only while the Memory pane is on screen)."""
        return "memory" in self._needs

    @property
    def needs(self) -> Needs:
        """The optional reads done each cycle (models/needs.py), following the panes on screen."""
        return self._needs

    @needs.setter
    def needs(self, needs: Needs) -> None:
        if "memory" in needs and not self.memory_enabled:
            # Switched back on: make the next cycle a full one so every process (the postmaster
            # and HugePages included) has its memory at once, not within REFRESH_S.
            self._full_at = None
        if "parameters" in needs and "parameters" not in self._needs:
            self._pending_at = None  # read the settings on the next cycle, not within a minute
        changed = needs != self._needs
        self._needs = needs
        if changed and self._caps is not None:
            self._build_sql(self._caps)  # the next cycle's statement asks for the new parts

    # -- task management (the poller calls these) --------------------------------------------

    def start(self) -> asyncio.Task[None]:
        """The running poll, or a new one when the last has finished."""
        return self._runner.start()

    def view(self) -> NodeSnapshot:
        """The latest result; while a poll runs, the last answer kept with how long it waits."""
        waited = self._runner.running_for()
        if waited is None:
            return self._take(self._result)
        if self._result.reachable:
            # Slow, not down: only statement_timeout or the poll's own limit makes it an error.
            return self._take(self._result).model_copy(update={"slow_s": waited})
        if self.last_ok_at is None and self._failures == 0:
            return NodeSnapshot(
                name=self.target.name,
                host=self.target.host,
                port=self.target.port,
                error=f"{self.target.host}:{self.target.port}: no answer yet after {waited:.1f}s",
                slow_s=waited,
            )
        return self._result  # the last poll failed: unreachable until one answers

    @property
    def lost_at(self) -> datetime | None:
        """When the server closed the kept connection under us, if it did since the last connect."""
        return self._lost_at

    def role_key(self) -> tuple[bool, bool | None, int | None] | None:
        """Whether the last read answered, with the recovery state and timeline; None before any answer."""
        if self.last_ok_at is None:
            return None
        result = self._result
        return result.reachable, result.in_recovery, result.timeline

    def unsettled(self) -> bool:
        """Not answering, or a poll waiting a second or more: the cluster is restless then."""
        waited = self._runner.running_for()
        return not self._result.reachable or (waited is not None and waited >= SLOW_S)

    async def aclose(self) -> None:
        """Stop the poll and drop the connection."""
        await self._runner.cancel()
        self._drop()

    def retry_now(self) -> None:
        """End a backoff: Patroni saw this node's PostgreSQL change, so the next cycle connects."""
        # Backing off up to BACKOFF_MAX_S after its failures, the reader said "DOWN" for seconds
        # while Patroni called the node running and it streamed again (a crash test's rejoin).
        # The failures are kept: failing again goes on backing off where it was.
        self._retry_at = 0.0

    # -- the poll -------------------------------------------------------------------------------

    def _drop(self) -> None:
        conn, self._conn, self._caps, self._sql = self._conn, None, None, None
        self._top.forget()  # the next connection may reach another server
        # The log's place is kept: a restarted server's new file is read from its start, as news.
        if conn is not None:
            conn.remove_termination_listener(self._lost)  # our own close is no loss
            if not conn.is_closed():
                conn.terminate()  # no goodbye: the server may be frozen

    def _server_log(self) -> ServerLog | None:
        """The log as last read, with every line read that no snapshot the poller took holds yet."""
        # Not "the cycle that read them": a cycle can read the log and then fail (a server just
        # restarted), or end after its cycle's view and be replaced by the next poll's result.
        value = self._log.value
        if value is None:
            return None
        if value is not self._log_read:
            self._log_read = value
            # A backlog is history, never news: it is not carried into a later read's lines.
            kept = () if value.backlog or self._unshown_backlog else self._unshown
            self._unshown = (kept + value.lines)[-MAX_UNSHOWN_LINES:]
            self._unshown_backlog = value.backlog
        if not self._unshown:
            if self._quiet_log is None or self._quiet_log[0] is not value:
                self._quiet_log = (value, _quiet(value))
            return self._quiet_log[1]
        if self._unshown == value.lines:
            return value
        return value.model_copy(update={"lines": self._unshown, "backlog": self._unshown_backlog})

    def _take(self, result: NodeSnapshot) -> NodeSnapshot:
        """``result`` as the poller takes it: its log lines the first time only."""
        log = result.server_log
        if log is None or not log.lines:
            return result
        if not self._unshown:  # taken already (a slow poll's result, viewed again)
            return result.model_copy(update={"server_log": _quiet(log)})
        self._unshown = ()
        return result

    def _lost(self, conn: asyncpg.Connection) -> None:
        """The kept connection closed under us: remember when, for the outage's start; poll now."""
        if conn is self._conn and self._lost_at is None:
            self._lost_at = self._clock()
            if self.on_lost is not None:
                self.on_lost()

    def _fail(self, message: str) -> None:
        loop = asyncio.get_running_loop()
        self._failures += 1
        if self._failures == 1:
            self._failing_from = loop.time()
        if self.last_ok_at is not None and loop.time() - self._failing_from < QUICK_RETRY_S:
            self._retry_at = 0.0
        else:
            delay = min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** (self._failures - 1))
            self._retry_at = loop.time() + delay
        if self._failures == 1:
            lost = self._lost_at
            asked = self._asked_at
            # The connection's loss was heard before the poll that failed was sent: that is when.
            self._failing_since = lost if lost is not None and (asked is None or lost < asked) else asked
        self._result = NodeSnapshot(
            name=self.target.name,
            host=self.target.host,
            port=self.target.port,
            error=message,
            last_ok_at=self.last_ok_at,
            failing_since=self._failing_since,
        )

    async def _connect(self) -> asyncpg.Connection:
        s = self._settings
        dsn = tls_dsn(s)
        kwargs: dict[str, Any] = {
            "host": self.target.host,
            "port": self.target.port,
            "database": self.target.dbname,
            "timeout": s.connect_timeout,
            "server_settings": server_settings(s),
            "statement_cache_size": 8,
        }
        if dsn is not None:
            kwargs["dsn"] = dsn
        if s.user is not None:
            kwargs["user"] = s.user
        if s.passfile is not None:
            kwargs["passfile"] = str(s.passfile)
        self.connects += 1
        conn: asyncpg.Connection = await pgguard.connect(allow_cleartext=s.allow_cleartext_password, **kwargs)
        return conn

    async def _ensure(self) -> tuple[asyncpg.Connection, Capabilities]:
        if self._conn is None or self._conn.is_closed() or self._sql is None or self._caps is None:
            self._drop()
            conn = await self._connect()
            try:
                row = await conn.fetchrow(PROBE_SQL)
                self.round_trips += 1
                caps = Capabilities.from_row(row)
            except BaseException:
                conn.terminate()
                raise
            self._conn, self._caps = conn, caps
            self._lost_at = None
            conn.add_termination_listener(self._lost)
            self._cert_not_after = _peer_not_after(conn)
            self.server_addr = caps.server_addr or self.server_addr
            self._build_sql(caps)
            self._memory.clear()
            self._full_at = None
            self._pending_at = None
            self._calm_at = None
            self._log.due()  # a server that just came back: its log tells why, at once
        return self._conn, self._caps

    def _build_sql(self, caps: Capabilities) -> None:
        needs = self._needs
        self._sql = build_query(caps, remote_memory=False, slow=False, needs=needs, calm=False)
        self._sql_calm = build_query(caps, remote_memory=False, slow=False, needs=needs)
        queries = statements_queries(caps)
        self._statements_sql, self._top.texts_sql = queries if queries is not None else (None, None)
        self._sql_pending = build_query(caps, remote_memory=False, slow=True, needs=needs)
        remote = not self._local and caps.remote_memory and self.memory_enabled
        self._sql_full = build_query(caps, remote_memory=True, slow=True, needs=needs) if remote else None

    def _full_due(self, now: float) -> bool:
        return self._full_at is None or now - self._full_at >= self.memory_refresh_s

    def _pending_due(self, now: float) -> bool:
        return (
            self._pending_at is None
            or now - self._pending_at >= PENDING_REFRESH_S
            or self._conf_load_time != self._pending_conf
        )

    async def _poll(self) -> None:
        loop = asyncio.get_running_loop()
        if self._failures and loop.time() < self._retry_at:
            return  # backing off: keep the last error
        self._asked_at = self._clock()
        connecting = self._conn is None or self._conn.is_closed()
        budget = self._settings.statement_timeout_ms / 1000 + 0.5
        if connecting:
            budget += self._settings.connect_timeout + 0.5
        try:
            async with asyncio.timeout(budget):
                conn, caps = await self._ensure()
                now = loop.time()
                full = self._full_due(now)
                pending = self._pending_due(now)
                # Still one round trip: a full or pending cycle's statement just asks for more.
                calm = self._calm_at is None or now - self._calm_at >= CALM_REFRESH_S
                sql: str | None
                if full and self._sql_full is not None:
                    sql, pending = self._sql_full, True
                elif pending:
                    sql = self._sql_pending
                else:
                    sql = self._sql_calm if calm else self._sql
                calm = calm or pending
                if sql is None:
                    raise ParseError("no statement prepared")
                sent = loop.time()
                text = await conn.fetchval(sql)
                self.last_query_s = loop.time() - sent
                self.round_trips += 1
                if "cache" not in self._needs:
                    self._cache.clear()
                else:
                    self.round_trips += await self._cache.refresh(conn, cache_query(caps), loop.time())
                if "statements" not in self._needs:
                    self._statements.clear()
                    self._top.forget()
                else:
                    sql_s = self._statements_sql
                    self.round_trips += await self._statements.refresh(conn, sql_s, loop.time())
                self.round_trips += await self._wal_disk.refresh(conn, wal_disk_query(caps), loop.time())
                log_sql = LOCATE_SQL if caps.read_log else None
                self.round_trips += await self._log.refresh(conn, log_sql, loop.time())
            if not isinstance(text, str):
                raise ParseError("postgres document: empty")
            parsed = self._parse(text, caps)
        except asyncio.CancelledError:
            self._drop()
            raise
        except TimeoutError as exc:
            self._drop()
            self._fail(describe_error(exc, self.target))
            return
        except (asyncpg.QueryCanceledError, asyncpg.LockNotAvailableError) as exc:
            # The server cancelled us (statement/lock timeout): the connection is still good.
            self._fail(describe_error(exc, self.target))
            return
        except ParseError as exc:
            self._fail(describe_error(exc, self.target))
            return
        except Exception as exc:  # any other failure is data about this node, never a crash
            self._drop()
            self._fail(describe_error(exc, self.target))
            return
        if full:
            self._full_at = loop.time()
        self._conf_load_time = parsed.conf_load_time
        if pending:
            self.pending_reads += 1
            self._pending_at = loop.time()
            self._pending_conf = parsed.conf_load_time
            self._pending = parsed.fields.get("pending_restart", ())
            self._settings_read = parsed.fields.get("parameters", ())
            self._huge_setting = parsed.huge_pages_setting
        parsed.fields["pending_restart"] = self._pending
        if calm:
            self.calm_reads += 1
            self._calm_at = loop.time()
            self._calm = {key: parsed.fields[key] for key in CALM_PARTS}
        else:
            parsed.fields.update(self._calm)
        # Settings change only with a reload or a restart: read on the same cycles, kept between.
        parsed.fields["parameters"] = self._settings_read if "parameters" in self._needs else None
        parsed.fields["cache"] = self._cache.value
        await self._finish(parsed, caps, full)

    def _parse(self, text: str, caps: Capabilities) -> Parsed:
        """parse_document; the same text as last cycle (same server): a copy of last cycle's parse."""
        # On a quiet cluster ~5 documents in 6 are the very text of the cycle before: parsing and
        # deriving one again made new models equal to the last. The copy is shallow:
        # the cycle sets its own fields (pending restarts, parameters, cache) on it.
        last = self._last_document
        if last is not None and last[1] is caps and last[0] == text:
            kept = last[2]
        else:
            kept = parse_document(text, caps)
            self._last_document = (text, caps, kept)
        return replace(
            kept,
            fields=dict(kept.fields),
            processes=list(kept.processes),
            remote_memory=dict(kept.remote_memory),
        )

    def _hugepages_view(self) -> HugePages | None:
        """The host's HugePages (memory cycles) with PostgreSQL's settings for them (reload cycles)."""
        host, pg = self._hugepages, self._huge_setting
        if host is None and pg is None:
            return None
        base = host or HugePages()
        if pg is None:
            return base
        last = self._huge_view
        if last is not None and last[0] is host and last[1] is pg:
            return last[2]  # the same readings: the same view (a pane tells "unchanged" by identity)
        view = base.model_copy(
            update={"setting": pg.setting, "status": pg.status, "shared_memory_pages": pg.shared_memory_pages}
        )
        self._huge_view = (host, pg, view)
        return view

    async def _refresh_memory(self, parsed: Parsed, full: bool) -> str | None:
        """Update the per-pid memory cache; a reason when memory cannot be read here."""
        if not self.memory_enabled:
            self._memory.clear()
            return None
        starts = {p.pid: p.backend_start for p in parsed.processes}
        # A pid whose backend_start changed is another process now: read it afresh.
        known = {
            pid: entry
            for pid, entry in self._memory.items()
            if (pid in starts and entry[0] == starts[pid]) or pid == self._postmaster_pid
        }
        if not self._local:
            if full and parsed.remote_memory:
                known = {pid: (starts.get(pid), m) for pid, m in parsed.remote_memory.items()}
                if parsed.postmaster_pid is not None and parsed.postmaster is not None:
                    known[parsed.postmaster_pid] = (None, parsed.postmaster)
                    self._postmaster_pid = parsed.postmaster_pid
                self._hugepages = parsed.hugepages
                self._source = "pg_read_file"
            self._memory = known
            return None
        wanted = [pid for pid in starts if full or pid not in known]
        reason: str | None = None
        if wanted or self._postmaster_pid is None:
            found, reason, postmaster = await asyncio.to_thread(
                procmem.read_local,
                wanted,
                parsed.backend_pid,
                self._proc,
                full or self._postmaster_pid is None,
                self.memory_refresh_s - 0.5,
            )
            if reason == procmem.NOT_HERE and self._caps is not None:
                # Loopback but not this host (an SSH tunnel): read memory like a remote node.
                self._local = False
                remote = self._caps.remote_memory
                self._build_sql(self._caps)
                self._full_at = None
                return None if remote else "needs superuser or pg_read_server_files"
            if full:
                self._hugepages = procmem.read_local_hugepages(self._proc)
            self._postmaster_pid = postmaster
            for pid, mem in found.items():
                known[pid] = (starts.get(pid), mem)
            if found:
                self._source = "local /proc"
        self._memory = known
        return reason

    async def _finish(self, parsed: Parsed, caps: Capabilities, full: bool) -> None:
        now = self._clock()
        local_reason = await self._refresh_memory(parsed, full)
        memory = self._memory
        # A process listed as before, with the same memory reading, is the Process made last
        # cycle: model_copy for each of ~30 processes a cycle was 2 % of the console.
        # The postmaster (not in pg_stat_activity) goes first, the same way.
        merged: dict[int, tuple[Process, procmem.Memory, Process]] = {}
        postmaster_pid = self._postmaster_pid
        listed = list(parsed.processes)
        if postmaster_pid is not None and postmaster_pid in memory:
            listed.insert(0, Process(pid=postmaster_pid, backend_type="postmaster"))
        rows = []
        for p in listed:
            mem = memory[p.pid][1] if p.pid in memory else None
            last = self._merged.get(p.pid)
            if mem is None:
                rows.append(p)
                continue
            row = last[2] if last is not None and last[1] is mem and last[0] == p else _with_memory(p, mem)
            merged[p.pid] = (p, mem, row)
            rows.append(row)
        self._merged = merged
        missing = unavailable(caps, local_memory=self._local)
        if self._local and local_reason and not memory:
            missing["processes.memory"] = local_reason
        if not self.memory_enabled:
            missing["processes.memory"] = NOT_ASKED
        for need in ("locks", "cache", "parameters", "sessions", "statements"):
            if need not in self._needs:
                missing.setdefault(need, NOT_ASKED)
        if "locks" not in self._needs:
            missing.setdefault("lock_counts", NOT_ASKED)
        if self._cache.error is not None:
            missing["cache"] = self._cache.error
        if self._statements.error is not None:
            missing["statements"] = self._statements.error
        elif self._statements.value is not None and not self._statements.fresh:
            # Only the cycle that read them carries them: a recording stores them once a read.
            missing["statements"] = BETWEEN_READS
        if self._log.error is not None:
            missing["server_log"] = self._log.error
        if self._wal_disk.error is not None:
            missing["wal_disk"] = self._wal_disk.error
        self.last_ok_at = now
        self._failures = 0
        self._failing_since = None
        self._result = NodeSnapshot(
            name=self.target.name,
            host=self.target.host,
            port=self.target.port,
            reachable=True,
            last_ok_at=now,
            server_version=caps.version,
            wal_segment_size=caps.wal_segment_size,
            wal_disk=self._wal_disk.value,
            cert_not_after=self._cert_not_after,
            processes=tuple(rows),
            statements=self._statements.value if self._statements.fresh else None,
            server_log=self._server_log(),
            memory_source=self._source if memory else None,
            hugepages_total=self._hugepages.total if self._hugepages else None,
            hugepages_free=self._hugepages.free if self._hugepages else None,
            hugepages=self._hugepages_view(),
            unavailable=missing,
            postmaster_pid=postmaster_pid,
            is_superuser=caps.superuser,
            **parsed.fields,
        )
