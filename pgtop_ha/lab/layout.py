"""Where a lab's ports, files and credentials are: pure arithmetic on base port and state dir."""

from __future__ import annotations

import json
import os
import re
import ssl
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError
from pgtop_ha.judge.support import POSTGRES
from pgtop_ha.lab.versions import PATRONI

NODE_NAMES = ("node1", "node2", "node3")
SCOPE = "pgtop-lab"
DBNAME = "labdb"
SUPERUSER = "postgres"
MONITOR_USER = "pgtop_monitor"
OPERATOR_USER = "pgtop_operator"
APP_USER = "lab_app"  # the lab's application: its client sessions are no superuser's
REPLICATION_USER = "replicator"
REST_USER = "patroni"
PUBLICATION = "lab_pub"
PERMANENT_SLOT = "lab_sub"
SUBSCRIPTION = "lab_sub"
COPY_TABLE = "sync_big"
LAYOUT_FILE = "layout.json"
_ADDED_LATER = frozenset({"pgbouncer", "pgpool", "pgpool_pcp"})  # ports a lab's record may predate
# A member name the lab can use everywhere it goes: Patroni's name, a directory, an HAProxy server,
# pgpool's scripts (a replication slot's name is Patroni's slug of it).
_MEMBER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$")
HAPROXY_SERVER_STYLES = ("members", "addresses")
# A lab of two members (a leader and one replica) to seven (two data centres and a witness): each
# member's PostgreSQL and REST ports sit in ten-port blocks (pg_port, rest_port), and seven
# Patronis are what two cores carry beside a console.
MIN_MEMBERS, MAX_MEMBERS = 2, 7


def member_names(text: str) -> tuple[str, ...]:
    """``--names a,b,c``: the lab's member names (2 to 7), checked; UserError naming the fix."""
    names = tuple(n.strip() for n in text.split(","))
    if not MIN_MEMBERS <= len(names) <= MAX_MEMBERS:
        raise UserError(f"--names {text!r}: give {MIN_MEMBERS} to {MAX_MEMBERS} names, comma-separated")
    for name in names:
        if not _MEMBER_NAME.match(name):
            raise UserError(
                f"--names: {name!r} is not a usable member name; use lowercase letters, digits, "
                "'-', '.' and '_' (up to 63, starting and ending with a letter or digit)"
            )
    if len(set(names)) != len(names):
        raise UserError(f"--names {text!r}: each member needs its own name")
    if "subscriber" in names:
        raise UserError("--names: 'subscriber' is the lab's subscriber (its data directory); pick another")
    return names


def default_state_dir() -> Path:
    """The lab's state directory when none is given."""
    if os.geteuid() == 0:
        return Path("/var/lib/pgtop-ha/lab")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pgtop-ha" / "lab"


@dataclass(frozen=True)
class Layout:
    """Ports and paths of one lab, derived from its base port and state directory."""

    base_port: int
    state_dir: Path
    names: tuple[str, ...] = NODE_NAMES  # the members' names (`lab up --names`)
    # How HAProxy names its servers: as the members, or as Patroni's example haproxy.cfg does
    # (`postgresql_127.0.0.1_PORT`, with `stats show-legends` so the console joins them by address).
    haproxy_servers: str = "members"
    postgres: int | None = None  # the PostgreSQL major (`lab up --postgres`); None: Debian's newest
    patroni: str | None = None  # the Patroni version (`lab up --patroni`); None: the one installed
    cascade: bool = False  # the last member streams from the second (`lab up --cascade`)
    tls: int | None = None  # days the server certificate is valid (`lab up --tls DAYS`); None: no TLS

    @property
    def tls_dir(self) -> Path:
        """The lab's CA and server certificate."""
        return self.state_dir / "tls"

    @property
    def verify(self) -> ssl.SSLContext | bool:
        """What the lab's own REST calls verify against: its CA with TLS, else nothing to verify."""
        return ssl.create_default_context(cafile=self.tls_dir / "ca.crt") if self.tls is not None else True

    def replicatefrom(self, index: int) -> str | None:
        """The member that member ``index`` streams from by its tag (None: from the leader)."""
        return self.names[1] if self.cascade and index == len(self.names) - 1 and index > 1 else None

    @property
    def etcd_client_port(self) -> int:
        """etcd's client port."""
        return self.base_port

    @property
    def etcd_peer_port(self) -> int:
        """etcd's peer port."""
        return self.base_port + 1

    def pg_port(self, index: int) -> int:
        """PostgreSQL port of node ``index`` (0-based)."""
        return self.base_port + 10 + index

    def rest_port(self, index: int) -> int:
        """Patroni REST port of node ``index`` (0-based)."""
        return self.base_port + 20 + index

    def patroni_url(self, index: int) -> str:
        """Patroni REST URL of node ``index`` (0-based)."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.rest_port(index)}"

    @property
    def writer_port(self) -> int:
        """HAProxy's writer listener (routes to Patroni's /primary)."""
        return self.base_port + 30

    @property
    def reader_port(self) -> int:
        """HAProxy's reader listener (routes to Patroni's /replica)."""
        return self.base_port + 31

    @property
    def stats_port(self) -> int:
        """HAProxy's stats page."""
        return self.base_port + 32

    @property
    def stats_url(self) -> str:
        """HAProxy's stats page URL."""
        return f"http://127.0.0.1:{self.stats_port}/stats"

    @property
    def pgbouncer_port(self) -> int:
        """pgBouncer (`lab up --with pgbouncer`), in front of HAProxy's writer port."""
        return self.base_port + 33

    @property
    def pgpool_port(self) -> int:
        """pgpool-II (`lab up --with pgpool`), in front of the nodes."""
        return self.base_port + 34

    @property
    def pcp_port(self) -> int:
        """pgpool-II's PCP (control) port."""
        return self.base_port + 35

    @property
    def subscriber_port(self) -> int:
        """The plain PostgreSQL subscriber's port."""
        return self.base_port + 40

    def port_map(self) -> dict[str, int]:
        """Every TCP port the lab listens on, by what listens there."""
        ports = {"etcd_client": self.etcd_client_port, "etcd_peer": self.etcd_peer_port}
        ports.update({f"{n}_postgres": self.pg_port(i) for i, n in enumerate(self.names)})
        ports.update({f"{n}_rest": self.rest_port(i) for i, n in enumerate(self.names)})
        ports.update(
            haproxy_writer=self.writer_port,
            haproxy_reader=self.reader_port,
            haproxy_stats=self.stats_port,
            pgbouncer=self.pgbouncer_port,
            pgpool=self.pgpool_port,
            pgpool_pcp=self.pcp_port,
            subscriber=self.subscriber_port,
        )
        return ports

    def ports(self) -> list[int]:
        """Every TCP port the lab listens on."""
        return list(self.port_map().values())

    @property
    def layout_file(self) -> Path:
        """Where `lab up` records this layout, so the state directory knows its ports."""
        return self.state_dir / LAYOUT_FILE

    def record(self) -> str:
        """The layout file's text: base port, every port, and the members' names when not the default."""
        doc: dict[str, object] = {"base_port": self.base_port, "ports": self.port_map()}
        if self.names != NODE_NAMES:
            doc["names"] = list(self.names)
        if self.haproxy_servers != "members":
            doc["haproxy_servers"] = self.haproxy_servers
        if self.postgres is not None:
            doc["postgres"] = self.postgres
        if self.patroni is not None:
            doc["patroni"] = self.patroni
        if self.cascade:
            doc["cascade"] = True
        if self.tls is not None:
            doc["tls"] = self.tls
        return json.dumps(doc, indent=1) + "\n"

    @property
    def run_dir(self) -> Path:
        """Sockets and PID files."""
        return self.state_dir / "run"

    @property
    def log_dir(self) -> Path:
        """Logs of every lab process."""
        return self.state_dir / "log"

    @property
    def secrets_dir(self) -> Path:
        """Generated passwords (mode 0700; never printed)."""
        return self.state_dir / "secrets"

    @property
    def pgpass(self) -> Path:
        """A .pgpass file for every lab role."""
        return self.secrets_dir / "pgpass"

    @property
    def rest_password_file(self) -> Path:
        """Patroni REST password file."""
        return self.secrets_dir / "patroni-rest"

    @property
    def haproxy_socket(self) -> Path:
        """HAProxy's stats socket."""
        return self.run_dir / "haproxy.sock"

    @property
    def console_config(self) -> Path:
        """The console config the lab writes for itself."""
        return self.state_dir / "pgtop-ha.toml"

    @property
    def audit_log(self) -> Path:
        """The lab console's audit log."""
        return self.state_dir / "audit.log"

    def server_log_dir(self, index: int) -> Path:
        """Where node ``index``'s PostgreSQL writes its own log (logging_collector)."""
        return self.log_dir / f"postgres-{self.names[index]}"

    def data_dir(self, index: int) -> Path:
        """PGDATA of node ``index``."""
        return self.state_dir / "data" / self.names[index]

    @property
    def subscriber_data_dir(self) -> Path:
        """PGDATA of the subscriber."""
        return self.state_dir / "data" / "subscriber"

    @property
    def pooler_dir(self) -> Path:
        """pgBouncer's and pgpool-II's configs (they hold the lab's passwords: mode 0700)."""
        return self.state_dir / "poolers"

    @property
    def pids_file(self) -> Path:
        """JSON record of every process the lab started."""
        return self.state_dir / "pids.json"


def saved_layout(state_dir: Path) -> Layout | None:
    """The layout `lab up` recorded in ``state_dir`` (None when there is no record)."""
    path = state_dir / LAYOUT_FILE
    try:
        raw = path.read_bytes()[:65536]
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"lab layout {path}: {exc.strerror}; make it readable") from None
    try:
        doc = json.loads(raw)
        base = doc["base_port"]
        ports = doc["ports"]
        names = doc.get("names", list(NODE_NAMES))
        servers = doc.get("haproxy_servers", "members")
        postgres, patroni, cascade = doc.get("postgres"), doc.get("patroni"), doc.get("cascade", False)
        tls = doc.get("tls")
    except (ValueError, TypeError, KeyError, AttributeError):
        base, ports, names, servers, postgres, patroni, cascade = None, None, None, None, None, None, False
        tls = None
    if not isinstance(base, int) or isinstance(base, bool) or not 1024 <= base <= 65000:
        raise UserError(f"lab layout {path} is damaged (no valid base_port); fix or remove it")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UserError(f"lab layout {path} is damaged (names); fix or remove it")
    if servers not in HAPROXY_SERVER_STYLES:
        raise UserError(f"lab layout {path} is damaged (haproxy_servers); fix or remove it")
    try:
        checked = member_names(",".join(names))
    except UserError:
        raise UserError(f"lab layout {path} is damaged (names); fix or remove it") from None
    if postgres not in (None, *POSTGRES) or patroni not in (None, *PATRONI) or not isinstance(cascade, bool):
        raise UserError(f"lab layout {path} is damaged (versions); fix or remove it")
    if tls is not None and (not isinstance(tls, int) or isinstance(tls, bool) or not 1 <= tls <= 3650):
        raise UserError(f"lab layout {path} is damaged (tls); fix or remove it")
    layout = Layout(
        base_port=base, state_dir=state_dir, names=checked, haproxy_servers=servers,
        postgres=postgres, patroni=patroni, cascade=cascade, tls=tls,
    )  # fmt: skip
    expected = layout.port_map()
    if isinstance(ports, dict) and not (_ADDED_LATER & ports.keys()):
        # A lab recorded before the poolers' ports existed: the rest must still agree.
        expected = {k: v for k, v in expected.items() if k not in _ADDED_LATER}
    if ports != expected:
        # Ports are derived from the base port; a record that disagrees was not written by this code.
        raise UserError(
            f"lab layout {path} lists ports this pgtop-ha would not use for base port {base}; "
            "stop that lab with the pgtop-ha that started it"
        )
    return layout
