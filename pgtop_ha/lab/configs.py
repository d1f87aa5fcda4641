"""Configuration files of the lab's daemons, rendered from its layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pgtop_ha.lab.layout import (
    APP_USER,
    COPY_TABLE,
    DBNAME,
    MONITOR_USER,
    OPERATOR_USER,
    PERMANENT_SLOT,
    PUBLICATION,
    REPLICATION_USER,
    REST_USER,
    SCOPE,
    SUPERUSER,
    Layout,
)
from pgtop_ha.lab.secrets import scram_verifier
from pgtop_ha.lab.tools import Tools

STANZA = "lab"
ARCHIVE_COMMAND = f"pgbackrest --stanza={STANZA} archive-push %p"


def etcd_argv(layout: Layout, etcd: str) -> list[str]:
    """Command line of the single-member etcd."""
    peer = f"http://127.0.0.1:{layout.etcd_peer_port}"
    client = f"http://127.0.0.1:{layout.etcd_client_port}"
    return [
        etcd,
        "--name", "lab",
        "--data-dir", str(layout.state_dir / "etcd"),
        "--listen-client-urls", client,
        "--advertise-client-urls", client,
        "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"lab={peer}",
        "--initial-cluster-state", "new",
        "--listen-metrics-urls", "",
    ]  # fmt: skip


def archive_command(layout: Layout, tools: Tools) -> str:
    """pgBackRest's archive-push where it knows this PostgreSQL, else a copy into the repo's wal/."""
    if tools.pgbackrest_archives:
        return ARCHIVE_COMMAND
    target = layout.state_dir / "pgbackrest" / "repo" / "wal"
    # The members share one archive: a segment the old primary archived is the new one's to skip
    # when identical, or archiving would stop at the first segment both have after a failover.
    # Copied under another name first, so an interrupted copy is never taken for a segment.
    done = f"{target}/%f"
    return f"test ! -f {done} && cp %p {done}.part && mv {done}.part {done} || cmp -s %p {done}"


def patroni_config(
    layout: Layout,
    index: int,
    passwords: dict[str, str],
    bin_dir: Path,
    archive: str = ARCHIVE_COMMAND,
    pg_version: int = 15,
) -> str:
    """Patroni's configuration for node ``index`` (JSON, which YAML readers accept)."""
    name = layout.names[index]
    conf: dict[str, Any] = {
        "scope": SCOPE,
        "name": name,
        # patroni.api at DEBUG logs each REST request: Patroni's own count of what a console asks.
        "log": {
            "level": "INFO",
            "dir": str(layout.log_dir / f"patroni-{name}"),
            "loggers": {"patroni.api": "DEBUG"},
        },
        "restapi": {
            "listen": f"127.0.0.1:{layout.rest_port(index)}",
            "connect_address": f"127.0.0.1:{layout.rest_port(index)}",
            "authentication": {"username": REST_USER, "password": passwords[REST_USER]},
            **_tls_restapi(layout),
        },
        "etcd3": {"hosts": [f"127.0.0.1:{layout.etcd_client_port}"]},
        "bootstrap": {
            "dcs": {
                # Short timings so failure tests finish quickly (loop_wait + 2*retry <= ttl).
                "ttl": 20,
                "loop_wait": 2,
                "retry_timeout": 5,
                "maximum_lag_on_failover": 16 * 1024 * 1024,
                # Without its DCS the leader keeps running while every member answers it.
                "failsafe_mode": True,
                "postgresql": {
                    "use_pg_rewind": True,
                    "use_slots": True,
                    "parameters": {
                        "wal_level": "logical",
                        "hot_standby": "on",
                        "hot_standby_feedback": "on",
                        "max_wal_senders": 10,
                        "max_replication_slots": 10,
                        "wal_keep_size": "128MB",
                        "wal_log_hints": "on",
                        "archive_mode": "on",
                        "archive_command": archive,
                        # pg_prewarm's autoprewarm worker reloads the buffer cache after a restart.
                        "shared_preload_libraries": "pg_stat_statements,pg_prewarm",
                        "track_io_timing": "on",
                        # Small, so a subscriber's transactions spill and stream for real.
                        "logical_decoding_work_mem": "64kB",
                        **({"sync_replication_slots": "on"} if pg_version >= NATIVE_SLOT_SYNC else {}),
                    },
                },
                "slots": {PERMANENT_SLOT: {"type": "logical", "database": DBNAME, "plugin": "pgoutput"}},
                # A subscriber's table-sync slots are unknown to Patroni: keep it from dropping them.
                "ignore_slots": [{"type": "logical", "plugin": "pgoutput"}],
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}, "data-checksums"],
            "post_bootstrap": str(layout.state_dir / "bootstrap.sh"),
        },
        "postgresql": {
            "listen": f"127.0.0.1:{layout.pg_port(index)}",
            "connect_address": f"127.0.0.1:{layout.pg_port(index)}",
            "data_dir": str(layout.data_dir(index)),
            "bin_dir": str(bin_dir),
            "pgpass": str(layout.run_dir / f"pgpass-{name}"),
            "authentication": {
                "superuser": {"username": SUPERUSER, "password": passwords[SUPERUSER]},
                "replication": {
                    "username": REPLICATION_USER,
                    "password": passwords[REPLICATION_USER],
                },
                "rewind": {"username": SUPERUSER, "password": passwords[SUPERUSER]},
            },
            "parameters": {
                "unix_socket_directories": str(layout.run_dir),
                "password_encryption": "scram-sha-256",
                # The server's own log, where the console tails it (jsonlog from PostgreSQL 15).
                "logging_collector": "on",
                "log_destination": "stderr,jsonlog" if pg_version >= JSONLOG else "stderr,csvlog",
                "log_directory": str(layout.server_log_dir(index)),
                "log_filename": "postgresql-%Y%m%d-%H%M%S.log",
                "log_file_mode": "0640",
                **_tls_postgres(layout),
            },
            "pg_hba": [
                "local all all scram-sha-256",
                f"host replication {REPLICATION_USER} 127.0.0.1/32 scram-sha-256",
                "host all all 127.0.0.1/32 scram-sha-256",
            ],
            "basebackup": [{"checkpoint": "fast"}],
            # pgpool-II (when the lab runs one) follows Patroni's leader through this callback: on a
            # promotion, and when Patroni (re)starts a primary in place, which pgpool may have
            # detached meanwhile.
            "callbacks": {
                action: f"{layout.state_dir / 'role-change.sh'} {name}"
                for action in ("on_role_change", "on_start", "on_restart")
            },
        },
        **_tls_config(layout),
        "tags": {
            "nofailover": False,
            "noloadbalance": False,
            "clonefrom": False,
            **({"replicatefrom": upstream} if (upstream := layout.replicatefrom(index)) else {}),
        },
    }
    return json.dumps(conf, indent=1)


def _tls_config(layout: Layout) -> dict[str, Any]:
    """Patroni's REST API over https, and what Patroni verifies its peers' with (`lab up --tls`)."""
    if layout.tls is None:
        return {}
    d = layout.tls_dir
    return {"ctl": {"cacert": str(d / "ca.crt")}}


def _tls_restapi(layout: Layout) -> dict[str, Any]:
    if layout.tls is None:
        return {}
    d = layout.tls_dir
    return {"certfile": str(d / "server.crt"), "keyfile": str(d / "server.key"), "cafile": str(d / "ca.crt")}


def _tls_postgres(layout: Layout) -> dict[str, Any]:
    if layout.tls is None:
        return {}
    d = layout.tls_dir
    return {"ssl": "on", "ssl_cert_file": str(d / "server.crt"), "ssl_key_file": str(d / "server.key")}


def patroni_env(layout: Layout, index: int, pg_lib: Path | None = None) -> dict[str, str]:
    """Environment of node ``index``'s Patroni: pgBackRest learns its own node from it.

    A PyPI build's server must load its own libpq: Debian's refuses options newer servers pass.
    """
    return {
        **({"LD_LIBRARY_PATH": str(pg_lib)} if pg_lib is not None else {}),
        "PGBACKREST_CONFIG": str(layout.state_dir / "pgbackrest.conf"),
        "PGBACKREST_PG1_PATH": str(layout.data_dir(index)),
        "PGBACKREST_PG1_PORT": str(layout.pg_port(index)),
        "PGBACKREST_PG1_SOCKET_PATH": str(layout.run_dir),
        "PGPASSFILE": str(layout.run_dir / "lab-pgpass"),
    }


def pgbackrest_conf(layout: Layout) -> str:
    """pgBackRest: asynchronous archive-push into a local repository."""
    pb = layout.state_dir / "pgbackrest"
    return "\n".join(
        [
            "[global]",
            f"repo1-path={pb / 'repo'}",
            f"spool-path={pb / 'spool'}",
            f"log-path={layout.log_dir / 'pgbackrest'}",
            f"lock-path={layout.run_dir / 'pgbackrest'}",
            "archive-async=y",
            "process-max=2",
            "archive-timeout=10",
            "log-level-console=warn",
            "log-level-file=info",
            "start-fast=y",
            "",
            f"[{STANZA}]",
            f"pg1-user={SUPERUSER}",
            "",
        ]
    )


def server_name(layout: Layout, index: int) -> str:
    """HAProxy's name for node ``index``: the member's, or its address as Patroni's example names it."""
    if layout.haproxy_servers == "addresses":
        return f"postgresql_127.0.0.1_{layout.pg_port(index)}"
    return layout.names[index]


def haproxy_cfg(layout: Layout) -> str:
    """HAProxy: a writer routed by Patroni's /primary, a reader by /replica, stats page and socket."""

    def pool(name: str, port: int, check: str, balance: str) -> list[str]:
        lines = [
            f"listen {name}",
            f"    bind 127.0.0.1:{port}",
            f"    balance {balance}",
            "    option httpchk",
            f"    http-check send meth GET uri {check}",
            "    http-check expect status 200",
            "    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions",
        ]
        for i in range(len(layout.names)):
            address = f"127.0.0.1:{layout.pg_port(i)}"
            # With TLS, the checks speak https to Patroni's REST API, against the lab's CA.
            tls = f" check-ssl ca-file {layout.tls_dir / 'ca.crt'}" if layout.tls is not None else ""
            lines.append(
                f"    server {server_name(layout, i)} {address} check port {layout.rest_port(i)}{tls}"
            )
        return [*lines, ""]

    return "\n".join(
        [
            "global",
            "    maxconn 200",
            f"    stats socket {layout.haproxy_socket} mode 660 level user",
            "",
            "defaults",
            "    mode tcp",
            "    timeout connect 3s",
            "    timeout client 30m",
            "    timeout server 30m",
            "    timeout check 2s",
            "",
            "listen stats",
            "    mode http",
            f"    bind 127.0.0.1:{layout.stats_port}",
            "    stats enable",
            "    stats uri /stats",
            "    stats refresh 5s",
            # Servers not named as members: the console joins them by the address this shows.
            *(["    stats show-legends"] if layout.haproxy_servers == "addresses" else []),
            # Debian 12's HAProxy 2.6 has the built-in exporter (USE_PROMEX): the fleet lab scrapes it.
            "    http-request use-service prometheus-exporter if { path /metrics }",
            "",
            *pool("pg_writer", layout.writer_port, "/primary", "first"),
            *pool("pg_reader", layout.reader_port, "/replica", "roundrobin"),
        ]
    )


_GRANTS = """DO $$
DECLARE f text;
BEGIN
  FOREACH f IN ARRAY ARRAY['pg_stat_reset()', 'pg_stat_reset_shared(text)',
                           'pg_stat_reset_replication_slot(text)'] LOOP
    IF to_regprocedure(f) IS NOT NULL THEN
      EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO {operator}', f);
    END IF;
  END LOOP;
  -- The console tails the server's log (within log_directory: no pg_read_server_files needed).
  GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint, boolean) TO {monitor};
  GRANT EXECUTE ON FUNCTION pg_current_logfile(text) TO {monitor};
END $$;
"""


# PostgreSQL 17's own logical slot failover: a slot created with failover = true, which standbys
# with sync_replication_slots keep in step, beside Patroni's permanent slot.
FAILOVER_SLOT = "lab_failover"
JSONLOG = 15
NATIVE_SLOT_SYNC = 17


def bootstrap_sql(passwords: dict[str, str], pg_version: int = 15) -> str:
    """Run once on the new primary: roles (SCRAM verifiers only), database, table, publication."""
    grants = _GRANTS.format(operator=OPERATOR_USER, monitor=MONITOR_USER)
    return f"""\\set ON_ERROR_STOP on
CREATE ROLE {MONITOR_USER} LOGIN PASSWORD '{scram_verifier(passwords[MONITOR_USER])}' IN ROLE pg_monitor;
CREATE ROLE {OPERATOR_USER} LOGIN PASSWORD '{scram_verifier(passwords[OPERATOR_USER])}';
-- The operator's hand on a blocker: it may signal any backend but a superuser's.
GRANT pg_signal_backend TO {OPERATOR_USER};
CREATE ROLE {APP_USER} LOGIN PASSWORD '{scram_verifier(passwords[APP_USER])}';
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
{grants}
CREATE DATABASE {DBNAME};
\\c {DBNAME}
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
-- Cache warmth: replicas get both extensions by replication.
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
CREATE EXTENSION IF NOT EXISTS pg_prewarm;
{grants}
CREATE TABLE {COPY_TABLE} (id bigint PRIMARY KEY, payload text NOT NULL,
                           created_at timestamptz NOT NULL DEFAULT now());
-- Before Patroni creates the permanent slot, so pgoutput finds the publication when decoding.
CREATE PUBLICATION {PUBLICATION} FOR TABLE {COPY_TABLE};
{_failover_slot_sql() if pg_version >= NATIVE_SLOT_SYNC else ""}"""


def _failover_slot_sql() -> str:
    return f"SELECT pg_create_logical_replication_slot('{FAILOVER_SLOT}', 'pgoutput', false, false, true);\n"


def bootstrap_script(layout: Layout, psql: Path) -> str:
    """Patroni's post_bootstrap hook: it passes a connection string as $1."""
    return f'#!/bin/sh\nexec {psql} "$1" -q -X -f {layout.state_dir / "bootstrap.sql"}\n'


def console_config(layout: Layout, poolers: tuple[str, ...] = (), pgbackrest: bool = True) -> str:
    """The console's own config for this lab (no passwords: files only); ``poolers`` it runs."""
    urls = ", ".join(f'"{layout.patroni_url(i)}"' for i in range(len(layout.names)))
    pgbackrest_config = layout.state_dir / "pgbackrest.conf"
    # Servers named by address are joined by the address the stats page shows (show-legends);
    # the socket, at level user, does not show it.
    socket = f'socket = "{layout.haproxy_socket}"' if layout.haproxy_servers == "members" else ""
    return f"""# Written by `pgtop-ha lab up`: `pgtop-ha --config {layout.console_config}`
cluster_name = "{SCOPE}"
interval = 1.0
audit_log = "{layout.audit_log}"

[patroni]
urls = [{urls}]
{_tls_console(layout)}
user = "{REST_USER}"
password_file = "{layout.rest_password_file}"

[postgres]
user = "{MONITOR_USER}"
dbname = "{DBNAME}"
passfile = "{layout.pgpass}"
operator_user = "{OPERATOR_USER}"
{_tls_console_postgres(layout)}
[haproxy]
url = "{layout.stats_url}"
{socket}

# What applications see: a new connection per cycle through HAProxy's writer and reader ports.
[[probes.endpoints]]
name = "writer"
host = "127.0.0.1"
port = {layout.writer_port}
kind = "writer"

[[probes.endpoints]]
name = "reader"
host = "127.0.0.1"
port = {layout.reader_port}
kind = "reader"
{_pooler_sections(layout, poolers)}
{_pgbackrest_section(pgbackrest_config) if pgbackrest else _NO_PGBACKREST}
[lab]
base_port = {layout.base_port}
state_dir = "{layout.state_dir}"
"""


def _tls_console(layout: Layout) -> str:
    if layout.tls is None:
        return ""
    return f"""ca_file = "{layout.tls_dir / "ca.crt"}"
"""


def _tls_console_postgres(layout: Layout) -> str:
    if layout.tls is None:
        return ""
    return f"""sslmode = "verify-full"
sslrootcert = "{layout.tls_dir / "ca.crt"}"
"""


_NO_PGBACKREST = """# This PostgreSQL is newer than the pgBackRest installed: the lab archives by copy.
[pgbackrest]
enabled = false
"""


def _pgbackrest_section(config: Path) -> str:
    return f"""# The lab's own repository (its nodes share this host, so the spool is read directly).
[pgbackrest]
enabled = true
config = "{config}"
"""


def _pooler_sections(layout: Layout, poolers: tuple[str, ...]) -> str:
    """Probe endpoints and admin sources for the poolers the lab runs."""
    out = ""
    # Each pooler's client port is probed by default (Settings.probe_endpoints): no endpoint here.
    if "pgbouncer" in poolers:
        out += f"""
# pgBouncer's admin console, read as a stats_users role (SHOW POOLS / DATABASES / STATS).
[[pgbouncer]]
name = "pgbouncer"
host = "127.0.0.1"
port = {layout.pgbouncer_port}
"""
    if "pgpool" in poolers:
        out += f"""
# pgpool-II's own SHOW pool_nodes / pool_processes, through its client port.
[[pgpool]]
name = "pgpool"
host = "127.0.0.1"
port = {layout.pgpool_port}
"""
    return out
