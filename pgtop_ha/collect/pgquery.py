"""The SQL of the PostgreSQL reader: a capability probe, then ONE statement returning everything.

The statement is built once per connection from the probe's answer (version, grants, views),
so an older server or a pg_monitor-only role never sees a query it cannot run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from pgtop_ha.models.needs import NONE, Needs

PROBE_SQL = """
select current_setting('server_version_num')::int as version,
       coalesce((select rolsuper from pg_roles where rolname = current_user), false) as superuser,
       pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') as read_all_stats,
       pg_has_role(current_user, 'pg_monitor', 'USAGE') as monitor,
       pg_has_role(current_user, 'pg_read_server_files', 'USAGE') as read_server_files,
       has_function_privilege('pg_read_file(text,bigint,bigint,boolean)', 'EXECUTE') as read_file,
       has_function_privilege('pg_ls_archive_statusdir()', 'EXECUTE') as ls_archive_status,
       concat_ws(', ',
         case when not has_function_privilege('pg_current_logfile(text)', 'EXECUTE')
              then 'pg_current_logfile(text)' end,
         case when not has_function_privilege('pg_ls_logdir()', 'EXECUTE') then 'pg_ls_logdir()' end,
         case when not has_function_privilege('pg_read_binary_file(text,bigint,bigint,boolean)', 'EXECUTE')
              then 'pg_read_binary_file(text, bigint, bigint, boolean)' end) as log_functions_missing,
       has_function_privilege('pg_control_checkpoint()', 'EXECUTE') as control_checkpoint,
       has_function_privilege('pg_show_all_file_settings()', 'EXECUTE') as file_settings,
       coalesce(has_function_privilege(to_regproc('pg_buffercache_pages')::oid, 'EXECUTE'), false)
         as buffercache,
       to_regclass('pg_catalog.pg_stat_progress_copy') is not null as progress_copy,
       to_regclass('pg_catalog.pg_stat_replication_slots') is not null as replication_slot_stats,
       to_regclass('pg_catalog.pg_stat_subscription_stats') is not null as subscription_stats,
       (select setting::bigint from pg_settings where name = 'wal_segment_size') as wal_segment_size,
       host(inet_server_addr()) as server_addr,
       (select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace
        where e.extname = 'pg_stat_statements') as statements_schema
"""


LOG_FUNCTIONS = "pg_current_logfile(text), pg_ls_logdir(), pg_read_binary_file(text, bigint, bigint, boolean)"


@dataclass(frozen=True)
class Capabilities:
    """What this connection's server and role can answer (probed once per connection)."""

    version: int
    superuser: bool = False
    read_all_stats: bool = False
    monitor: bool = False
    read_server_files: bool = False
    read_file: bool = False
    ls_archive_status: bool = False
    # Of the functions tailing the server's log takes, those the role may not run ("": none).
    log_functions_missing: str = LOG_FUNCTIONS
    control_checkpoint: bool = False
    file_settings: bool = False
    buffercache: bool = False
    progress_copy: bool = False
    replication_slot_stats: bool = False
    subscription_stats: bool = False
    wal_segment_size: int | None = None
    # The address the server took this connection on (None over a unix socket): a member named
    # by a host name is still found by the address HAProxy or a pooler shows (models/servers.py).
    server_addr: str | None = None
    statements_schema: str | None = None  # where pg_stat_statements is installed; None: not here

    @classmethod
    def from_row(cls, row: Any) -> Capabilities:
        """From the probe's single row (a mapping)."""
        return cls(
            version=int(row["version"]),
            superuser=bool(row["superuser"]),
            read_all_stats=bool(row["read_all_stats"]),
            monitor=bool(row["monitor"]),
            read_server_files=bool(row["read_server_files"]),
            read_file=bool(row["read_file"]),
            ls_archive_status=bool(row["ls_archive_status"]),
            log_functions_missing=str(row.get("log_functions_missing", LOG_FUNCTIONS)),
            control_checkpoint=bool(row["control_checkpoint"]),
            file_settings=bool(row["file_settings"]),
            buffercache=bool(row["buffercache"]),
            progress_copy=bool(row["progress_copy"]),
            replication_slot_stats=bool(row["replication_slot_stats"]),
            subscription_stats=bool(row["subscription_stats"]),
            wal_segment_size=row["wal_segment_size"],
            server_addr=row.get("server_addr"),
            statements_schema=row.get("statements_schema"),
        )

    @property
    def read_log(self) -> bool:
        """Whether the role may tail the server's log (every function it takes)."""
        return not self.log_functions_missing

    @property
    def remote_memory(self) -> bool:
        """Whether pg_read_file may read /proc files (superuser, or the grant and EXECUTE)."""
        return self.superuser or (self.read_server_files and self.read_file)


def _lsn(expr: str) -> str:
    return f"pg_wal_lsn_diff({expr}, '0/0')::bigint"


def _version_label(version: int) -> str:
    return f"PostgreSQL {version // 10000}+"


def unavailable(caps: Capabilities, *, local_memory: bool) -> dict[str, str]:
    """Section/field → why it cannot be read with this server and role."""
    out: dict[str, str] = {}
    v = caps.version
    if v < 130000:
        out["slots.wal_status"] = f"n/a ({_version_label(130000)})"
    if not caps.replication_slot_stats:
        out["slots.stats"] = f"n/a ({_version_label(140000)})"
    if not caps.progress_copy:
        out["copy_progress"] = f"n/a ({_version_label(140000)})"
    if not caps.subscription_stats:
        out["subscriptions.stats"] = f"n/a ({_version_label(150000)})"
    if v < 160000:
        out["slots.conflicting"] = f"n/a ({_version_label(160000)})"
    if v < 170000:
        out["slots.failover"] = f"n/a ({_version_label(170000)})"
    if not caps.read_all_stats:
        reason = "needs pg_monitor (or pg_read_all_stats)"
        out["replication"] = reason
        out["wal_receiver"] = reason
        out["processes"] = reason
        out["locks"] = reason
        out["horizon"] = reason
        out["maintenance"] = reason
        out["copy_progress"] = out.get("copy_progress", reason)
    if not caps.buffercache:
        out["cache"] = "needs the pg_buffercache extension in this database (and pg_monitor)"
    if not caps.file_settings:
        out["parameters.file_setting"] = "needs superuser (pg_file_settings)"
    if not caps.ls_archive_status:
        out["archiver.ready_count"] = "needs pg_monitor"
        out["wal_disk"] = "needs pg_monitor (pg_ls_waldir)"
    if not caps.read_log:
        missing = caps.log_functions_missing
        out["server_log"] = f"to tail the server's log: GRANT EXECUTE ON FUNCTION {missing} TO the role"

    if caps.statements_schema is None:
        out["statements"] = (
            "pg_stat_statements is not installed in this database: add it to shared_preload_libraries,"
            " restart, then CREATE EXTENSION pg_stat_statements"
        )
    if not local_memory and not caps.remote_memory:
        out["processes.memory"] = "needs superuser or pg_read_server_files"
    return out


# Each view's query is a file in collect/sql/, as pg_activity keeps its queries: NAME.sql the base
# (PostgreSQL 12's views), NAME.pgNN.sql from PostgreSQL NN on. The server's version
# (from the capability probe) picks the newest file it can run; a view with no file for the
# version (copy before 14) is not asked. Grant-dependent pieces are $placeholders.
SQL_DIR = resources.files("pgtop_ha.collect") / "sql"
_VARIANT = re.compile(r"^(?P<name>[a-z_]+)(?:\.pg(?P<major>\d+))?\.sql$")
# The base files' views: older than judge/support.py's supported range, which is warned about.
OLDEST_MAJOR = 12


@cache
def sql_variants() -> dict[str, dict[int, str]]:
    """Every view's query text by the first PostgreSQL major version it is for (comments out)."""
    out: dict[str, dict[int, str]] = {}
    for entry in SQL_DIR.iterdir():
        m = _VARIANT.match(entry.name)
        if m is None:
            continue
        text = "\n".join(
            line
            for line in entry.read_text(encoding="utf-8").splitlines()
            if not line.lstrip().startswith("--")
        ).strip()
        out.setdefault(m["name"], {})[int(m["major"] or OLDEST_MAJOR)] = text
    return out


def view_sql(name: str, version: int, **pieces: str) -> str | None:
    """The query of view ``name`` for a server of ``version`` (server_version_num), or None."""
    variants = sql_variants()[name]
    fitting = [major for major in variants if major * 10000 <= version]
    if not fitting:
        return None
    return Template(variants[max(fitting)]).substitute(pieces)


def _view(name: str, version: int, **pieces: str) -> str:
    sql = view_sql(name, version, **pieces)
    if sql is None:
        raise ValueError(f"no {name} query for PostgreSQL {version}")
    return sql


def cache_query(caps: Capabilities) -> str | None:
    """The Cache pane's own statement (pg_buffercache), or None when it cannot be read.

    Not a part of the cycle's statement: pg_buffercache_pages() visits every buffer header
    (~25 ms of server time for 128 MB of shared_buffers on the lab), so the reader sends it on its
    own, only while the Cache pane is on screen and at most every CACHE_REFRESH_S.
    """
    return view_sql("cache", caps.version) if caps.buffercache else None


# Entries of pg_stat_statements read per refresh (its default pg_stat_statements.max is 5000).
MAX_STATEMENT_ENTRIES = 5000


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def statements_queries(caps: Capabilities) -> tuple[str, str] | None:
    """The counters' and the texts' statements of pg_stat_statements; None where it is not installed."""
    if caps.statements_schema is None:
        return None
    schema = _identifier(caps.statements_schema)
    counters = view_sql("statements", caps.version, schema=schema, limit=str(MAX_STATEMENT_ENTRIES))
    texts = view_sql("statement_texts", caps.version, schema=schema)
    return (counters, texts) if counters and texts else None


def wal_disk_query(caps: Capabilities) -> str | None:
    """pg_wal's size and its bounds, its own statement on the calm cadence; None without the grant."""
    return view_sql("wal_disk", caps.version) if caps.ls_archive_status else None


def _file_setting(caps: Capabilities) -> str:
    if not caps.file_settings:
        return "null::text"
    # The last applicable line of the configuration files for a setting pending a restart.
    return (
        "case when s.pending_restart then (select f.setting from pg_file_settings f"
        " where f.name = s.name and f.error is null order by f.seqno desc limit 1) end"
    )


def _row(sql: str) -> str:
    return f"(select row_to_json(t) from ({sql}) t)"


def _archiver(caps: Capabilities) -> str:
    ready = "null::bigint"
    if caps.ls_archive_status:
        ready = "(select count(*) from pg_ls_archive_statusdir() where name like '%.ready')"
    return _view("archiver", caps.version, ready_count=ready)


def _read(path_expr: str) -> str:
    # A fixed length makes pg_read_file read procfs files (their stat size is 0); missing_ok
    # turns a process that just exited into NULL instead of an error for the whole statement.
    return f"pg_read_file({path_expr}, 0, 16384, true)"


# Ages from clock_timestamp(), not now(): a query begun after this statement began (this
# console's own, another's) would be a negative age.
_SESSIONS = """,
  'client_addr', json_agg(host(a.client_addr)),
  'query_s', json_agg(date_part('epoch', clock_timestamp() - a.query_start)),
  'xact_s', json_agg(date_part('epoch', clock_timestamp() - a.xact_start)),
  'state_s', json_agg(date_part('epoch', clock_timestamp() - a.state_change)),
  'xmin_age', json_agg(age(a.backend_xmin)::bigint)"""


# An idle client session: listed only where its memory is read, counted otherwise. A session whose
# state the role may not read is neither: only in processes_total.
_IDLE_SESSION = "(a.backend_type = 'client backend' and a.state = 'idle')"
_NOT_IDLE = f"{_IDLE_SESSION} is not true"
# Every backend, from the ids of the same snapshot pg_stat_activity reads (one per transaction):
# counting them builds no row. Counted once (a CTE of the statement) for the total and the idle.
_TOTAL = "(select n from backend_count)"
_IDLE_COUNT = f"{_TOTAL} - (select count(*) from pg_stat_activity a where {_NOT_IDLE})"


def _processes(caps: Capabilities, remote_memory: bool, sessions: bool = False, idle: bool = True) -> str:
    memory = ""
    if remote_memory:
        smaps = _read("'/proc/' || a.pid || '/smaps_rollup'")
        status = _read("'/proc/' || a.pid || '/status'")
        memory = f",\n  'smaps', json_agg({smaps}), 'status', json_agg({status})"
    where = "" if idle else f"\nwhere not {_IDLE_SESSION}"
    extra = _SESSIONS if sessions else ""
    limit = str(MAX_PROCESSES)
    return _view("processes", caps.version, memory=memory, sessions=extra, where=where, limit=limit)


# HugePages as PostgreSQL sees them; the last two are NULL where the server is too old (< 15, < 17).
_HUGE_PAGES = """json_build_object('setting', current_setting('huge_pages'),
  'status', current_setting('huge_pages_status', true),
  'shared_memory_pages', nullif(current_setting('shared_memory_size_in_huge_pages', true), '')::bigint)"""

_REMOTE_POSTMASTER = f"""
select json_build_object('pid', p.pid,
         'smaps', {_read("'/proc/' || p.pid || '/smaps_rollup'")},
         'status', {_read("'/proc/' || p.pid || '/status'")},
         'meminfo', {_read("'/proc/meminfo'")})
from (select (regexp_match({_read("'/proc/' || pg_backend_pid() || '/status'")},
                           'PPid:\\s+(\\d+)'))[1]::int as pid) p"""


# Rows a node's document holds at most of a view that grows with the server's load; the count of
# them all comes beside, so the screen says how many more there are.
MAX_PROCESSES = 1000
MAX_SLOTS = 500
MAX_LOCKS = 200
MAX_HORIZON = 20
MAX_MAINTENANCE = 50
MAX_OPEN_XACTS = 20
# Transactions younger than this are not listed: below every sensible threshold for a long one.
OPEN_XACT_FLOOR_S = 10


def _agg(sql: str, cap: int | None = None) -> str:
    rows = sql if cap is None else f"select * from ({sql}) s limit {cap}"
    return f"(select coalesce(json_agg(t), '[]'::json) from ({rows}) t)"


# Parts that change slowly or are judged on minutes: read on calm cycles (collect/postgres.py),
# every CALM_REFRESH_S, and kept between.
CALM_PARTS = ("subscriptions", "archiver", "horizon", "open_transactions")


# Every part reads the same list of backends, built once: each read of the view builds a row for
# every backend again (the costliest part of the statement when there are hundreds of sessions).
# The parts' SQL names pg_stat_activity, so each file also runs alone against the view itself.
def _one_activity(everyone: bool) -> str:
    # An idle session has no transaction: no snapshot, no xid, no progress, so only the process
    # list and the lock trees (a session-level advisory lock outlives its transaction) need it.
    where = "" if everyone else f" a where {_NOT_IDLE}"
    return (
        f"with pg_stat_activity as materialized (select * from pg_catalog.pg_stat_activity{where}),\n"
        "backend_count as materialized (select count(*) as n from pg_stat_get_backend_idset())\n"
    )


def build_query(
    caps: Capabilities, *, remote_memory: bool, slow: bool = True, needs: Needs = NONE, calm: bool = True
) -> str:
    """The one statement returning every view as a single JSON document (as text).

    ``slow`` adds the part that changes rarely and costs most (pg_settings' pending restarts,
    ~0.7-1 ms of server time: pg_show_all_settings() builds every GUC's row before any filter);
    ``remote_memory`` adds /proc reads through pg_read_file; ``needs`` adds the optional parts that
    the panes on screen ask for (models/needs.py); ``calm`` adds CALM_PARTS (always with ``slow``).
    Every variant reports
    ``conf_load_time``: a pending restart can only appear or clear with a configuration reload
    (or a restart, which ends this connection), so the reader asks for ``slow`` again only when
    that time changes.
    """
    v = caps.version
    idle = remote_memory or "memory" in needs  # each process's memory is read: every one listed
    paused = "pg_is_wal_replay_paused()"
    if v >= 140000:
        paused = "pg_get_wal_replay_pause_state() <> 'not paused'"
    standby_tli = "(select received_tli from pg_stat_wal_receiver)"
    if caps.control_checkpoint:
        standby_tli = f"coalesce({standby_tli}, (select timeline_id from pg_control_checkpoint()))"
    # The primary's timeline from its current WAL file name: pg_control_checkpoint() lags
    # after a promotion until the next checkpoint.
    primary_tli = "('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int"
    parts: list[tuple[str, str]] = [
        ("in_recovery", "pg_is_in_recovery()"),
        ("backend_pid", "pg_backend_pid()"),
        ("conf_load_time", "pg_conf_load_time()::text"),
        (
            "timeline",
            f"case when pg_is_in_recovery() then {standby_tli} else {primary_tli} end",
        ),
        (
            "current_lsn",
            f"case when not pg_is_in_recovery() then {_lsn('pg_current_wal_lsn()')} end",
        ),
        ("receive_lsn", _lsn("pg_last_wal_receive_lsn()")),
        ("replay_lsn", _lsn("pg_last_wal_replay_lsn()")),
        ("replay_timestamp", "pg_last_xact_replay_timestamp()"),
        ("replay_paused", f"case when pg_is_in_recovery() then {paused} end"),
        (
            "synchronous_standby_names",
            "case when not pg_is_in_recovery()"
            " then left(current_setting('synchronous_standby_names'), 256) end",
        ),
        ("replication", _agg(_view("replication", v))),
        ("wal_receiver", _row(_view("wal_receiver", v))),
        ("slots", _agg(_view("slots", v), MAX_SLOTS)),
        ("slots_total", "(select count(*) from pg_get_replication_slots())"),  # the view joins pg_database
        ("subscriptions", _agg(_view("subscriptions", v))),
        ("archiver", _row(_archiver(caps))),
        ("processes", f"({_processes(caps, remote_memory, 'sessions' in needs, idle)})"),
        ("processes_total", _TOTAL),
        *([] if idle else [("idle_sessions", _IDLE_COUNT)]),
        ("horizon", _agg(_view("horizon", v), MAX_HORIZON)),
        (
            "open_transactions",
            _agg(_view("open_transactions", v, floor=str(OPEN_XACT_FLOOR_S)), MAX_OPEN_XACTS),
        ),
    ]
    if not (calm or slow):
        parts = [(key, expr) for key, expr in parts if key not in CALM_PARTS]
    if slow:
        parts.append(("pending_restart", _agg(_view("pending_restart", v))))
        parts.append(("huge_pages", _HUGE_PAGES))
        if "parameters" in needs:
            parts.append(("parameters", _agg(_view("settings", v, file_setting=_file_setting(caps)))))
    if "locks" in needs and caps.read_all_stats:
        locks = _view("locks", v)
        parts.append(("locks", _agg(locks, MAX_LOCKS)))
        parts.append(("locks_total", f"(select count(*) from ({locks}) c)"))
        parts.append(("lock_counts", _agg(_view("lock_counts", v))))
    maintenance = view_sql("maintenance", v)
    if maintenance is not None:
        parts.append(("maintenance", _agg(maintenance, MAX_MAINTENANCE)))
    copy = view_sql("copy", v) if caps.progress_copy else None
    if copy is not None:
        parts.append(("copy_progress", _agg(copy)))
    if remote_memory:
        parts.append(("postmaster", f"({_REMOTE_POSTMASTER})"))
    body = ",\n  ".join(f"'{key}', {expr}" for key, expr in parts)
    everyone = idle or any(key == "locks" for key, _ in parts)
    return f"{_one_activity(everyone)}select json_build_object(\n  {body}\n)::text"
