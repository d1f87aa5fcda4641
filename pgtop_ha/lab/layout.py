"""Where a lab's ports, files and credentials are: pure arithmetic on base port and state dir."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pgtop_ha.errors import UserError

NODE_NAMES = ("node1", "node2", "node3")
SCOPE = "pgtop-lab"
DBNAME = "labdb"
SUPERUSER = "postgres"
MONITOR_USER = "pgtop_monitor"
OPERATOR_USER = "pgtop_operator"
REPLICATION_USER = "replicator"
REST_USER = "patroni"
PUBLICATION = "lab_pub"
PERMANENT_SLOT = "lab_sub"
SUBSCRIPTION = "lab_sub"
COPY_TABLE = "sync_big"
LAYOUT_FILE = "layout.json"
_ADDED_LATER = frozenset({"pgbouncer", "pgpool", "pgpool_pcp"})  # ports a lab's record may predate


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
        return f"http://127.0.0.1:{self.rest_port(index)}"

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
        """pgpool-II (`lab up --with pgpool`), in front of the three nodes."""
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
        ports.update({f"{n}_postgres": self.pg_port(i) for i, n in enumerate(NODE_NAMES)})
        ports.update({f"{n}_rest": self.rest_port(i) for i, n in enumerate(NODE_NAMES)})
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
        """The layout file's text: base port and every port."""
        return json.dumps({"base_port": self.base_port, "ports": self.port_map()}, indent=1) + "\n"

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

    def data_dir(self, index: int) -> Path:
        """PGDATA of node ``index``."""
        return self.state_dir / "data" / NODE_NAMES[index]

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
    except (ValueError, TypeError, KeyError):
        base, ports = None, None
    if not isinstance(base, int) or isinstance(base, bool) or not 1024 <= base <= 65000:
        raise UserError(f"lab layout {path} is damaged (no valid base_port); fix or remove it")
    layout = Layout(base_port=base, state_dir=state_dir)
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
