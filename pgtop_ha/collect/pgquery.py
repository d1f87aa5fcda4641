"""The SQL of the PostgreSQL reader: a capability probe, then ONE statement returning everything.

The statement is built once per connection from the probe's answer (version, grants, views),
so a PostgreSQL 12 server or a pg_monitor-only role never sees a query it cannot run.
"""

from __future__ import annotations

from dataclasses import dataclass
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
       has_function_privilege('pg_control_checkpoint()', 'EXECUTE') as control_checkpoint,
       to_regclass('pg_catalog.pg_stat_progress_copy') is not null as progress_copy,
       to_regclass('pg_catalog.pg_stat_replication_slots') is not null as replication_slot_stats,
       to_regclass('pg_catalog.pg_stat_subscription_stats') is not null as subscription_stats,
       (select setting::bigint from pg_settings where name = 'wal_segment_size') as wal_segment_size
"""


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
    control_checkpoint: bool = False
    progress_copy: bool = False
    replication_slot_stats: bool = False
    subscription_stats: bool = False
    wal_segment_size: int | None = None

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
            control_checkpoint=bool(row["control_checkpoint"]),
            progress_copy=bool(row["progress_copy"]),
            replication_slot_stats=bool(row["replication_slot_stats"]),
            subscription_stats=bool(row["subscription_stats"]),
            wal_segment_size=row["wal_segment_size"],
        )

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
        out["copy_progress"] = out.get("copy_progress", reason)
    if not caps.ls_archive_status:
        out["archiver.ready_count"] = "needs pg_monitor"
    if not local_memory and not caps.remote_memory:
        out["processes.memory"] = "needs superuser or pg_read_server_files"
    return out


def _slots(caps: Capabilities) -> str:
    cols = [
        "s.slot_name",
        "s.slot_type",
        "s.plugin",
        "s.database",
        "s.active",
        "s.active_pid",
        "s.temporary",
        f"{_lsn('s.restart_lsn')} as restart_lsn",
        f"{_lsn('s.confirmed_flush_lsn')} as confirmed_flush_lsn",
    ]
    if caps.version >= 130000:
        cols += ["s.wal_status", "s.safe_wal_size"]
    if caps.version >= 160000:
        cols += ["s.conflicting"]
    if caps.version >= 170000:
        cols += ["s.invalidation_reason", "s.failover", "s.synced"]
    join = ""
    if caps.replication_slot_stats:
        cols += [
            f"st.{c}"
            for c in (
                "spill_txns",
                "spill_count",
                "spill_bytes",
                "stream_txns",
                "stream_count",
                "stream_bytes",
                "total_txns",
                "total_bytes",
                "stats_reset",
            )
        ]
        join = " left join pg_stat_replication_slots st on st.slot_name = s.slot_name"
    return f"select {', '.join(cols)} from pg_replication_slots s{join} order by s.slot_name"


_REPLICATION = f"""
select pid, application_name, host(client_addr) as client_addr, state, sync_state,
       {_lsn("sent_lsn")} as sent_lsn, {_lsn("write_lsn")} as write_lsn,
       {_lsn("flush_lsn")} as flush_lsn, {_lsn("replay_lsn")} as replay_lsn,
       extract(epoch from write_lag)::float8 as write_lag_s,
       extract(epoch from flush_lag)::float8 as flush_lag_s,
       extract(epoch from replay_lag)::float8 as replay_lag_s
from pg_stat_replication order by application_name, pid"""

_WAL_RECEIVER = """
select status, received_tli, sender_host, sender_port, slot_name, last_msg_receipt_time
from pg_stat_wal_receiver"""

# pg_class's relpages/reltuples need no lock (pg_relation_size would queue behind DDL locks).
_COPY = """
select c.pid, c.datname,
       case when c.datname = current_database() and c.relid <> 0
            then c.relid::regclass::text end as relation,
       c.command, c.type, a.application_name, c.bytes_processed, c.bytes_total,
       c.tuples_processed, c.tuples_excluded,
       case when c.datname = current_database() and c.relid <> 0 then
         (select k.relpages::bigint * current_setting('block_size')::bigint
          from pg_class k where k.oid = c.relid) end as relation_size_bytes,
       case when c.datname = current_database() and c.relid <> 0 then
         (select k.reltuples::float8 from pg_class k where k.oid = c.relid) end as relation_tuples
from pg_stat_progress_copy c left join pg_stat_activity a on a.pid = c.pid
order by c.pid"""


def _subscriptions(caps: Capabilities) -> str:
    stats_cols = ""
    stats_join = ""
    if caps.subscription_stats:
        stats_cols = ", ss.apply_error_count, ss.sync_error_count"
        stats_join = " left join pg_stat_subscription_stats ss on ss.subid = s.subid"
    return f"""
select s.subname, s.pid,
       case when s.relid is not null then s.relid::regclass::text end as relation,
       {_lsn("s.received_lsn")} as received_lsn, {_lsn("s.latest_end_lsn")} as latest_end_lsn,
       s.last_msg_receipt_time,
       coalesce((select json_object_agg(x.st, x.n) from
                  (select r.srsubstate::text as st, count(*) as n from pg_subscription_rel r
                   where r.srsubid = s.subid group by r.srsubstate) x), '{{}}'::json)
         as table_states{stats_cols}
from pg_stat_subscription s{stats_join} order by s.subname, s.pid"""


def _archiver(caps: Capabilities) -> str:
    ready = "null::bigint"
    if caps.ls_archive_status:
        ready = "(select count(*) from pg_ls_archive_statusdir() where name like '%.ready')"
    return f"""
select archived_count, failed_count, last_archived_wal, last_archived_time, last_failed_wal,
       last_failed_time, stats_reset, {ready} as ready_count,
       current_setting('archive_mode') as archive_mode,
       case when not pg_is_in_recovery() then pg_walfile_name(pg_current_wal_lsn()) end
         as current_wal
from pg_stat_archiver"""


def _read(path_expr: str) -> str:
    # A fixed length makes pg_read_file read procfs files (their stat size is 0); missing_ok
    # turns a process that just exited into NULL instead of an error for the whole statement.
    return f"pg_read_file({path_expr}, 0, 16384, true)"


def _processes(remote_memory: bool) -> str:
    memory = ""
    if remote_memory:
        smaps = _read("'/proc/' || a.pid || '/smaps_rollup'")
        status = _read("'/proc/' || a.pid || '/status'")
        memory = f", {smaps} as smaps, {status} as status"
    return f"""
select a.pid, a.backend_type, a.state, a.datname, a.usename, a.application_name,
       a.wait_event_type, a.wait_event, a.backend_start, left(a.query, 1024) as query{memory}
from pg_stat_activity a order by a.pid"""


_REMOTE_POSTMASTER = f"""
select json_build_object('pid', p.pid,
         'smaps', {_read("'/proc/' || p.pid || '/smaps_rollup'")},
         'status', {_read("'/proc/' || p.pid || '/status'")},
         'meminfo', {_read("'/proc/meminfo'")})
from (select (regexp_match({_read("'/proc/' || pg_backend_pid() || '/status'")},
                           'PPid:\\s+(\\d+)'))[1]::int as pid) p"""


def _agg(sql: str) -> str:
    return f"(select coalesce(json_agg(t), '[]'::json) from ({sql}) t)"


def build_query(caps: Capabilities, *, remote_memory: bool, slow: bool = True, needs: Needs = NONE) -> str:
    """The one statement returning every view as a single JSON document (as text).

    ``slow`` adds the part that changes rarely and costs most (pg_settings' pending restarts,
    ~0.7-1 ms of server time: pg_show_all_settings() builds every GUC's row before any filter);
    ``remote_memory`` adds /proc reads through pg_read_file; ``needs`` adds the optional parts that
    the panes on screen ask for (models/needs.py). Every variant reports
    ``conf_load_time``: a pending restart can only appear or clear with a configuration reload
    (or a restart, which ends this connection), so the reader asks for ``slow`` again only when
    that time changes.
    """
    if caps.version >= 140000:
        paused = "pg_get_wal_replay_pause_state() <> 'not paused'"
    else:
        paused = "pg_is_wal_replay_paused()"
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
        ("replication", _agg(_REPLICATION)),
        ("wal_receiver", f"(select row_to_json(t) from ({_WAL_RECEIVER}) t)"),
        ("slots", _agg(_slots(caps))),
        ("subscriptions", _agg(_subscriptions(caps))),
        ("archiver", f"(select row_to_json(t) from ({_archiver(caps)}) t)"),
        ("processes", _agg(_processes(remote_memory))),
    ]
    if slow:
        pending = "select name, context from pg_settings where pending_restart order by name"
        parts.append(("pending_restart", _agg(pending)))
    if caps.progress_copy:
        parts.append(("copy_progress", _agg(_COPY)))
    if remote_memory:
        parts.append(("postmaster", f"({_REMOTE_POSTMASTER})"))
    body = ",\n  ".join(f"'{key}', {expr}" for key, expr in parts)
    return f"select json_build_object(\n  {body}\n)::text"
