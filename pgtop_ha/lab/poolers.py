"""The lab's connection layer (`lab up --with pgbouncer,pgpool`): configs, start, readiness.

pgBouncer sits in front of HAProxy's writer port; pgpool-II in front of the nodes with no failover
command: Patroni's role-change callback tells it the primary (pcp_promote_node). Both run as the
lab user, are in the PID book and log under the lab's log directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import socket
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.lab import procs
from pgtop_ha.lab.layout import DBNAME, MONITOR_USER, OPERATOR_USER, SUPERUSER, Layout

POOLERS = ("pgbouncer", "pgpool")
PCP_USER = "pcp"
PGPOOL_CHILDREN = 8  # pgpool forks this many children up front; the lab needs few


def parse_with(text: str | None) -> tuple[str, ...]:
    """``--with pgbouncer,pgpool`` as a tuple; an unknown name is an error naming the known ones."""
    if not text:
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in POOLERS]
    if unknown:
        raise UserError(f"--with {','.join(unknown)}: unknown; choose from {','.join(POOLERS)}")
    return names


def binary(name: str) -> Path:
    """pgbouncer or pgpool, or the apt-get line that installs it."""
    package = {"pgbouncer": "pgbouncer", "pgpool": "pgpool2", "pcp_promote_node": "pgpool2"}[name]
    found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise UserError(f"{name} not found; install it with: apt-get install -y {package}")
    return Path(found)


def pgbouncer_ini(layout: Layout) -> str:
    """pgbouncer.ini: the lab database through HAProxy's writer port, the monitor as stats user."""
    d = layout.pooler_dir
    return f"""[databases]
{DBNAME} = host=127.0.0.1 port={layout.writer_port} dbname={DBNAME}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {layout.pgbouncer_port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {d / "pgbouncer-users.txt"}
admin_users = {SUPERUSER}
stats_users = {MONITOR_USER}
pool_mode = transaction
max_client_conn = 200
default_pool_size = 10
server_check_delay = 5
log_connections = 0
log_disconnections = 0
"""


def pgbouncer_users(passwords: dict[str, str]) -> str:
    """pgBouncer's auth_file: plain passwords (it needs them to log in to the server with SCRAM)."""
    return "".join(f'"{r}" "{passwords[r]}"\n' for r in (SUPERUSER, MONITOR_USER, OPERATOR_USER))


def pgpool_conf(layout: Layout) -> str:
    """pgpool.conf: streaming replication, load balancing, checks on, failover off."""
    d, run = layout.pooler_dir, layout.run_dir
    backends = "".join(
        f"backend_hostname{i} = '127.0.0.1'\nbackend_port{i} = {layout.pg_port(i)}\n"
        f"backend_weight{i} = 1\nbackend_flag{i} = 'ALLOW_TO_FAILOVER'\n"
        f"backend_application_name{i} = '{name}'\n"
        for i, name in enumerate(layout.names)
    )
    return f"""backend_clustering_mode = 'streaming_replication'
listen_addresses = '127.0.0.1'
port = {layout.pgpool_port}
socket_dir = '{run}'
pcp_listen_addresses = '127.0.0.1'
pcp_port = {layout.pcp_port}
pcp_socket_dir = '{run}'
pid_file_name = '{run / "pgpool.pid"}'
logdir = '{run}'
log_destination = 'stderr'
{backends}
enable_pool_hba = on
pool_passwd = '{d / "pool_passwd"}'
num_init_children = {PGPOOL_CHILDREN}
max_pool = 2
load_balance_mode = on
sr_check_period = 2
sr_check_user = '{MONITOR_USER}'
sr_check_password = ''
sr_check_database = '{DBNAME}'
health_check_period = 2
health_check_timeout = 5
health_check_user = '{MONITOR_USER}'
health_check_password = ''
health_check_database = '{DBNAME}'
health_check_max_retries = 2
health_check_retry_delay = 1
failover_command = ''
follow_primary_command = ''
failover_on_backend_error = off
search_primary_node_timeout = 10
auto_failback = on
auto_failback_interval = 5
detach_false_primary = off
memory_cache_enabled = off
memqcache_total_size = 1MB
"""


def pool_hba() -> str:
    """pool_hba.conf: SCRAM from loopback only."""
    return "local all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\n"


def pool_passwd(passwords: dict[str, str]) -> str:
    """pool_passwd with TEXT passwords (pgpool needs them for SCRAM to the backends)."""
    return "".join(f"{r}:TEXT{passwords[r]}\n" for r in (SUPERUSER, MONITOR_USER, OPERATOR_USER))


def pcp_conf(password: str) -> str:
    """pcp.conf: the PCP user and the md5 of its password (pgpool's format)."""
    return f"{PCP_USER}:{hashlib.md5(password.encode()).hexdigest()}\n"  # noqa: S324  (pgpool's format)


def pcppass(layout: Layout, password: str) -> str:
    """The .pcppass the role-change callback uses (host:port:user:password)."""
    return f"127.0.0.1:{layout.pcp_port}:{PCP_USER}:{password}\n"


def role_change_script(layout: Layout) -> str:
    """Patroni's callback: tell pgpool (if the lab runs one) which node is primary.

    Patroni calls it as ``script NODE action role scope`` (NODE is in the configured command),
    on a role change and when it (re)starts PostgreSQL; only a primary role acts.
    Without a pgpool in the lab it does nothing, so every lab carries it.
    """
    d = layout.pooler_dir
    cases = " ".join(f"{name}) id={i};;" for i, name in enumerate(layout.names))
    return f"""#!/bin/sh
# Written by `pgtop-ha lab up`: follow Patroni's leader in pgpool-II (never promotes anything).
[ "$3" = primary ] || [ "$3" = master ] || exit 0
[ -f {d / "pcppass"} ] || exit 0
case "$1" in {cases} *) exit 0;; esac
PCPPASSFILE={d / "pcppass"}; export PCPPASSFILE
# pgpool may have detached this node while it was down (a crash, a kill): attach it first, as
# pgpool promotes only a node it holds up. An attached node makes this a no-op.
timeout 10 /usr/sbin/pcp_attach_node -h 127.0.0.1 -p {layout.pcp_port} -U {PCP_USER} -w -n "$id" \\
    >>{layout.log_dir / "pgpool-follow.log"} 2>&1
exec timeout 20 /usr/sbin/pcp_promote_node -h 127.0.0.1 -p {layout.pcp_port} \\
    -U {PCP_USER} -w -n "$id" >>{layout.log_dir / "pgpool-follow.log"} 2>&1
"""


def port_open(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def started(name: str, layout: Layout) -> bool:
    """Whether ``name``'s listener answers (pgBouncer: its port; pgpool: its and PCP's)."""
    if name == "pgbouncer":
        return port_open(layout.pgbouncer_port)
    return port_open(layout.pgpool_port) and port_open(layout.pcp_port)


def argv(name: str, layout: Layout) -> list[str]:
    """The foreground command line of ``name``."""
    d = layout.pooler_dir
    if name == "pgbouncer":
        return [str(binary("pgbouncer")), str(d / "pgbouncer.ini")]
    # -n: foreground; -D: forget node states from a previous run (pgpool_status).
    return [
        str(binary("pgpool")), "-n", "-D",
        "-f", str(d / "pgpool.conf"), "-F", str(d / "pcp.conf"), "-a", str(d / "pool_hba.conf"),
    ]  # fmt: skip


def spawn(name: str, layout: Layout, run_as: procs.RunAs) -> int:
    """Start ``name`` as the lab user; its PID."""
    proc = procs.spawn(
        argv(name, layout), log=layout.log_dir / f"{name}.log", run_as=run_as, cwd=layout.run_dir
    )
    return proc.pid


def check_installed(names: tuple[str, ...]) -> None:
    """Fail early, naming the package, when a requested pooler is not installed."""
    for name in names:
        binary(name)
        if name == "pgpool":
            binary("pcp_promote_node")
