"""The lab itself: bring up, inspect and tear down a sandbox Patroni cluster on 127.0.0.1."""

from __future__ import annotations

import contextlib
import io
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from pgtop_ha.errors import UserError
from pgtop_ha.lab import configs, poolers, procs, secrets, tls, versions
from pgtop_ha.lab.layout import COPY_TABLE, DBNAME, SUPERUSER, Layout, saved_layout
from pgtop_ha.lab.progress import Progress
from pgtop_ha.lab.tools import Tools, find_tools

LAB_USER = "pgtopha"
MARKER = ".pgtop-ha-lab"
DEFAULT_ROWS = 1_000_000
RUNTIME_DIR = Path("/var/lib/pgtop-ha/patroni-venv")
STANZA_LOCK_WAIT_S = 60.0  # the first async archive-push may hold the archive lock this long


@dataclass(frozen=True)
class MemberStatus:
    """One lab member as Patroni's /cluster names it, with its ports and PIDs."""

    name: str
    role: str | None
    state: str | None
    timeline: int | None
    pg_port: int
    rest_port: int
    patroni_pid: int | None
    postmaster_pid: int | None


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _claim(lock: Path) -> bool:
    """Take ``lock`` for this process unless a live process holds it (atomic create)."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and procs.alive(holder):
                return False
            lock.unlink(missing_ok=True)  # its holder is gone: the claim is stale
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(str(os.getpid()))
        return True
    return False


def claim_layout(state_dir: Path | None, start: int = 26400, stop: int = 30000) -> Layout:
    """A layout on a free port range, its state directory claimed atomically (for test suites)."""
    for base in range(start, stop, 50):
        layout = Layout(base, state_dir or Path(f"/tmp/pgtop-ha-test-{base}"))
        if not all(_port_free(p) for p in layout.ports()):
            continue
        lock = Path(f"/tmp/pgtop-ha-port-{base}.claim")
        if _claim(lock):
            if state_dir is None and layout.state_dir.exists() and not _clear_stale(layout):
                lock.unlink(missing_ok=True)
                continue
            return layout
    raise UserError(f"no free lab port range between {start} and {stop}; free some ports")


def _clear_stale(layout: Layout) -> bool:
    """Take down a lab a dead suite left in a range just claimed (its processes, then its files)."""
    try:
        Lab(layout, out=io.StringIO()).down()
    except UserError:
        return False  # not a lab's directory, or processes that will not stop: leave it be
    return True


class Lab:
    """A sandbox cluster identified by its base port and state directory."""

    def __init__(self, layout: Layout, out: Any = None) -> None:
        self.layout = layout
        self.out = out or sys.stderr
        self.book = procs.PidBook(layout.pids_file)
        self._run_as: procs.RunAs | None = None
        self._tools: Tools | None = None

    # ----- identity and helpers -------------------------------------------------------------
    @property
    def run_as(self) -> procs.RunAs:
        """The unprivileged user lab daemons run as (as root: ``pgtopha``, created if missing)."""
        if self._run_as is None:
            if os.geteuid() != 0:
                self._run_as = procs.RunAs(home=str(Path.home()))
            else:
                try:
                    pw = pwd.getpwnam(LAB_USER)
                except KeyError:
                    subprocess.run(
                        ["useradd", "--system", "--user-group", "--home-dir", "/nonexistent",
                         "--no-create-home", "--shell", "/usr/sbin/nologin", LAB_USER],
                        check=True, capture_output=True,
                    )  # fmt: skip
                    pw = pwd.getpwnam(LAB_USER)
                self._run_as = procs.RunAs(uid=pw.pw_uid, gid=pw.pw_gid, home=str(self.layout.run_dir))
        return self._run_as

    def exists(self) -> bool:
        """Whether this state directory holds a lab made by pgtop-ha."""
        return (self.layout.state_dir / MARKER).exists()

    def _chown(self, path: Path) -> None:
        if self.run_as.uid is not None:
            os.chown(path, self.run_as.uid, self.run_as.gid or -1)

    def lab_dir(self, path: Path, mode: int = 0o700) -> Path:
        """A directory owned by the lab user."""
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(mode)
        self._chown(path)
        return path

    def lab_file(self, path: Path, text: str, mode: int = 0o600) -> Path:
        """A file owned by the lab user (private unless ``mode`` says otherwise)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        path.chmod(mode)
        self._chown(path)
        return path

    def _can_run_patroni(self, python: str) -> bool:
        if not Path(python).exists():
            return False
        try:
            procs.run([python, "-c", "import patroni, psycopg"], run_as=self.run_as, timeout=60)
        except (subprocess.CalledProcessError, OSError):
            return False
        return True

    def patroni_python(self, note: Callable[[str], None] | None = None) -> str:
        """An interpreter with Patroni that the lab user can run (checked, never assumed).

        The version `lab up --patroni` chose, in its own venv; else ours, when the lab user can read
        it; else (a checkout under /root, say) a runtime made once with the same Patroni version.
        """
        if self.layout.patroni is not None:
            return str(versions.ensure_patroni(self.layout.patroni, note or (lambda _: None)))
        if self._can_run_patroni(sys.executable):
            return sys.executable
        runtime = RUNTIME_DIR / "bin" / "python"
        if self._can_run_patroni(str(runtime)):
            return str(runtime)
        if os.geteuid() != 0:
            raise UserError(
                f"Patroni is not importable from {sys.executable}; install the lab extra: "
                "pip install 'pgtop-ha[lab]'"
            )
        from importlib.metadata import PackageNotFoundError, version

        try:
            pins = [f"patroni[etcd3]=={version('patroni')}", f"psycopg[binary]=={version('psycopg')}"]
        except PackageNotFoundError:
            raise UserError(
                "Patroni is not installed; install the lab extra: pip install 'pgtop-ha[lab]'"
            ) from None
        print(
            f"      … {LAB_USER} cannot read {sys.executable}; making a Patroni runtime in "
            f"{RUNTIME_DIR} (once)",
            file=self.out,
            flush=True,
        )
        RUNTIME_DIR.parent.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                ["/usr/bin/python3", "-m", "venv", str(RUNTIME_DIR)], check=True, capture_output=True
            )
            subprocess.run(
                [str(runtime), "-m", "pip", "install", "-q", *pins], check=True, capture_output=True
            )
        except (subprocess.CalledProcessError, OSError) as exc:
            raise UserError(
                f"could not make a Patroni runtime in {RUNTIME_DIR} ({exc}); install python3-venv "
                "or put the checkout under a directory the lab user can read, e.g. /opt"
            ) from None
        if not self._can_run_patroni(str(runtime)):
            raise UserError(f"{LAB_USER} still cannot run Patroni from {RUNTIME_DIR}; check its permissions")
        return str(runtime)

    def tools(self, note: Callable[[str], None] | None = None) -> Tools:
        """The lab's binaries, its PostgreSQL version's (found once); ``note`` allows fetching that build."""
        if self._tools is None:
            self._tools = find_tools(self.layout.postgres, note)
        return self._tools

    def env(self, index: int) -> dict[str, str]:
        """Environment of node ``index``'s Patroni and of pgBackRest run for it."""
        return configs.patroni_env(self.layout, index, self.tools().pg_lib)

    def cluster(self, timeout: float = 2.0) -> dict[str, Any] | None:
        """Patroni's GET /cluster from the first member that answers."""
        for i in range(len(self.layout.names)):
            try:
                resp = httpx.get(
                    f"{self.layout.patroni_url(i)}/cluster",
                    timeout=timeout,
                    trust_env=False,
                    verify=self.layout.verify,
                )
                if resp.status_code == 200:
                    data: dict[str, Any] = resp.json()
                    return data
            except (httpx.HTTPError, ValueError):
                continue
        return None

    def own_state(self, name: str, timeout: float = 2.0) -> str | None:
        """The state node ``name`` reports on its own GET /patroni (None when it does not answer)."""
        try:
            resp = httpx.get(
                f"{self.layout.patroni_url(self.index(name))}/patroni",
                timeout=timeout,
                trust_env=False,
                verify=self.layout.verify,
            )
            state = resp.json().get("state")
        except (httpx.HTTPError, ValueError):
            return None
        return state if isinstance(state, str) else None

    def versions(self) -> dict[str, str]:
        """What runs: PostgreSQL and its build, Patroni per member, and the archive command with why."""
        tools = self.tools()
        major = tools.pg_version
        build = f"Debian's, {tools.pg_bin}" if tools.pg_lib is None else f"PyPI build, {tools.pg_bin}"
        out = {"postgres": f"{major} ({build})"}
        seen = []
        for i, name in enumerate(self.layout.names):
            try:
                doc = httpx.get(
                    f"{self.layout.patroni_url(i)}/patroni",
                    timeout=2,
                    trust_env=False,
                    verify=self.layout.verify,
                ).json()
                seen.append(f"{name} {doc.get('patroni', {}).get('version', '?')}")
            except (httpx.HTTPError, ValueError, AttributeError):
                seen.append(f"{name} not answering")
        out["patroni"] = ", ".join(seen)
        known = versions.pgbackrest_version(tools.pgbackrest)
        shown = ".".join(map(str, known)) if known else "?"
        why = f"pgBackRest {shown} knows PostgreSQL {major}"
        if not tools.pgbackrest_archives:
            needs = ".".join(map(str, versions.PGBACKREST_KNOWS[major]))
            why = f"pgBackRest {shown} cannot archive PostgreSQL {major}, it needs {needs}: pane left out"
        out["archive"] = f"{configs.archive_command(self.layout, tools)} ({why})"
        return out

    def leader(self) -> str | None:
        """The member /cluster calls leader."""
        data = self.cluster() or {}
        return next((m["name"] for m in data.get("members", []) if m.get("role") == "leader"), None)

    def healthy(self) -> bool:
        """One leader running and every other member streaming, by /cluster and by each node itself."""
        members = (self.cluster() or {}).get("members", [])
        leaders = [m for m in members if m.get("role") == "leader" and m.get("state") == "running"]
        streaming = [m for m in members if m.get("role") != "leader" and m.get("state") == "streaming"]
        if len(leaders) != 1 or len(streaming) != len(self.layout.names) - 1:
            return False
        # /cluster keeps a crashed member's last entry until its TTL: confirm with each node.
        # (A node's own /patroni says "running" where /cluster says a replica is "streaming".)
        return all(self.own_state(m["name"]) == "running" for m in members)

    def index(self, name: str) -> int:
        """Index of node ``name``; a clear error for an unknown one."""
        if name not in self.layout.names:
            raise UserError(f"no lab node {name!r}; use one of {', '.join(self.layout.names)}")
        return self.layout.names.index(name)

    def dsn(self, node: str | int = 0, user: str = SUPERUSER, dbname: str = DBNAME) -> str:
        """A libpq DSN (no password: the lab's pgpass supplies it)."""
        i = node if isinstance(node, int) else self.index(node)
        return f"postgresql://{user}@127.0.0.1:{self.layout.pg_port(i)}/{dbname}"

    def psql(
        self,
        sql: str,
        node: str | int = 0,
        dbname: str = DBNAME,
        timeout: float = 60,
        port: int | None = None,
        options: str = "",
    ) -> str:
        """Run SQL on a node (or any lab ``port``) as the superuser; psql's unaligned output.

        ``options``: session settings as PGOPTIONS takes them (``-c name=value ...``).
        """
        i = node if isinstance(node, int) else self.index(node)
        port = port or self.layout.pg_port(i)
        tools = self.tools()
        result = subprocess.run(
            [str(tools.psql), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(port), "-U", SUPERUSER, "-d", dbname, "-c", sql],
            capture_output=True, text=True, timeout=timeout,
            env=procs.lab_env(
                {"PGPASSFILE": str(self.layout.pgpass), "PGCONNECT_TIMEOUT": "5", "PGOPTIONS": options}
            ),
        )  # fmt: skip
        if result.returncode != 0:
            raise UserError(f"SQL on 127.0.0.1:{port} failed: {result.stderr.strip()}")
        return result.stdout.strip()

    # ----- up -------------------------------------------------------------------------------
    def up(self, rows: int = DEFAULT_ROWS, with_: tuple[str, ...] = ()) -> None:
        """Start whatever is not running yet and wait for one leader and the others streaming.

        ``with_`` adds poolers (pgbouncer, pgpool); those a previous `up` started are kept.
        """
        with_ = tuple(dict.fromkeys((*self.poolers(), *with_)))
        progress = Progress(total=8 if with_ else 7, out=self.out)
        progress.step("checking binaries, ports and the lab user")
        tools = self.tools(progress.note)
        poolers.check_installed(with_)
        state = self.layout.state_dir
        if state.exists() and any(state.iterdir()) and not self.exists():
            raise UserError(
                f"state dir {state} is not empty and was not made by pgtop-ha lab; choose another --state-dir"
            )
        saved = saved_layout(state)
        if saved is not None and saved.base_port != self.layout.base_port:
            raise UserError(
                f"the lab in {state} uses base port {saved.base_port}, not {self.layout.base_port}; "
                f"omit --base-port or give --base-port {saved.base_port}"
            )
        self._check_made_by(tools.pg_version)
        self._check_ports(with_)
        python = self.patroni_python(progress.note) if self._patroni_missing() else sys.executable

        progress.step(f"preparing {state} (PostgreSQL {tools.pg_version})")
        self._prepare(tools)

        progress.step("starting etcd")
        self._start_etcd(tools, progress)

        progress.step(f"starting Patroni on {', '.join(self.layout.names)}")
        for i, name in enumerate(self.layout.names):
            # A cascading member starts once there is a leader: were it to win the race to
            # bootstrap, it would lead, and there would be no cascade.
            if self.layout.replicatefrom(i) and not procs.poll(lambda: self.leader() is not None, 120):
                raise UserError(f"no leader within 120s; see {self.layout.log_dir}")
            if not self.book.running(f"patroni-{name}"):
                self.start_patroni(name, python=python)
        self._wait_members(progress, timeout=240)

        progress.step("pgBackRest stanza and HAProxy")
        if tools.pgbackrest_archives:
            self._stanza(tools)
        self._start_haproxy(tools, progress)

        progress.step(f"loading {COPY_TABLE} ({rows:,} rows) and pgbench tables")
        self._load(tools, rows, progress)

        if with_:
            progress.step(f"starting {' and '.join(with_)}")
            self.start_poolers(with_, progress)
        progress.step("writing the console config")
        self.layout.console_config.write_text(
            configs.console_config(self.layout, with_, pgbackrest=tools.pgbackrest_archives)
        )
        # Patroni restarts each replica once to create the permanent slot there: wait it out.
        self._wait_members(progress, timeout=240)
        if tools.pg_version >= configs.NATIVE_SLOT_SYNC:
            self.sync_failover_slots(progress)
        progress.done(
            f"lab up: one leader and {self._replicas()}; console: pgtop-ha --config "
            f"{self.layout.console_config}"
        )

    def sync_failover_slots(self, progress: Progress | None = None, timeout: float = 60) -> bool:
        """Advance the failover slots on the leader, as a consumer would, until standbys sync them.

        A standby copies a failover slot only once it has moved past the standby's own start: an
        idle one stays behind, and a switchover to that standby loses it.
        """
        # A running-xacts record first, so decoding can move the slot's restart_lsn past it.
        advance = (
            "SELECT pg_log_standby_snapshot(); "
            "SELECT count(pg_replication_slot_advance(slot_name, pg_current_wal_lsn())) "
            "FROM pg_replication_slots WHERE failover AND NOT active"
        )
        synced = "SELECT count(*) FROM pg_replication_slots WHERE failover AND synced AND NOT temporary"

        # A standby's own failover slot (left from when it led) blocks syncing: drop it, as a DBA would.
        stale = (
            "SELECT count(pg_drop_replication_slot(slot_name)) FROM pg_replication_slots "
            "WHERE failover AND NOT synced AND NOT active"
        )

        def done() -> bool:
            if progress is not None:
                progress.note(f"advancing {configs.FAILOVER_SLOT} until every standby syncs it")
            try:
                leader = self.leader_index()
                self.psql(advance, leader, timeout=10)
                standbys = [i for i in range(len(self.layout.names)) if i != leader]
                for i in standbys:
                    self.psql(stale, i, timeout=10)
                return all(self.psql(synced, i, timeout=10) not in ("", "0") for i in standbys)
            except UserError:
                return False

        return procs.poll(done, timeout, interval=1.0)

    def _patroni_missing(self) -> bool:
        return any(not self.book.running(f"patroni-{n}") for n in self.layout.names)

    def _check_ports(self, with_: tuple[str, ...] = ()) -> None:
        ours = {
            self.layout.etcd_client_port: "etcd", self.layout.etcd_peer_port: "etcd",
            self.layout.writer_port: "haproxy", self.layout.reader_port: "haproxy",
            self.layout.stats_port: "haproxy",
        }  # fmt: skip
        if "pgbouncer" in with_:
            ours[self.layout.pgbouncer_port] = "pgbouncer"
        if "pgpool" in with_:
            ours[self.layout.pgpool_port] = ours[self.layout.pcp_port] = "pgpool"
        for i, n in enumerate(self.layout.names):
            ours[self.layout.pg_port(i)] = f"patroni-{n}"
            ours[self.layout.rest_port(i)] = f"patroni-{n}"
        for port, owner in ours.items():
            if self.book.running(owner):
                continue
            if not _port_free(port):
                raise UserError(
                    f"port {port} (for {owner}) on 127.0.0.1 is already in use; choose another "
                    f"--base-port (the lab uses {self.layout.base_port}..{self.layout.base_port + 40})"
                )

    def _prepare(self, tools: Tools) -> None:
        layout = self.layout
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        # The lab user must be able to traverse into its directories.
        layout.state_dir.chmod(0o755)
        (layout.state_dir / MARKER).touch()
        # `lab status`, `down` and `fault` find the ports here, whatever flags they are given.
        layout.layout_file.write_text(layout.record())
        passwords = secrets.ensure(layout)
        run_dir = self.lab_dir(layout.run_dir)
        self.lab_dir(layout.log_dir, 0o755)
        for sub in ("data", "etcd", "pgbackrest", "pgbackrest/repo", "pgbackrest/repo/wal",
                    "pgbackrest/spool"):  # fmt: skip
            self.lab_dir(layout.state_dir / sub)
        self.lab_dir(layout.log_dir / "pgbackrest")
        for i, name in enumerate(self.layout.names):
            self.lab_dir(layout.log_dir / f"patroni-{name}")
            self.lab_dir(layout.server_log_dir(i), 0o750)
        if self.run_as.uid is not None:
            probe = procs.run(["test", "-w", str(run_dir)], run_as=self.run_as, check=False)
            if probe.returncode != 0:
                raise UserError(
                    f"user {LAB_USER} cannot reach {layout.state_dir} (a parent directory is private); "
                    "choose a --state-dir under /var/lib or /tmp"
                )
        self.lab_file(run_dir / "lab-pgpass", secrets.pgpass_text(passwords))
        self.lab_file(layout.state_dir / "pgbackrest.conf", configs.pgbackrest_conf(layout), 0o644)
        self.lab_file(layout.state_dir / "haproxy.cfg", configs.haproxy_cfg(layout), 0o644)
        self.lab_file(layout.state_dir / "bootstrap.sql", configs.bootstrap_sql(passwords, tools.pg_version))
        self.lab_file(layout.state_dir / "role-change.sh", poolers.role_change_script(layout), 0o755)
        self.lab_file(layout.state_dir / "bootstrap.sh", configs.bootstrap_script(layout, tools.psql), 0o700)
        archive = configs.archive_command(layout, tools)
        if layout.tls is not None:
            tls.make_certificates(layout.tls_dir, layout.tls)
            self._chown(layout.tls_dir)
            for path in layout.tls_dir.iterdir():
                self._chown(path)
                path.chmod(0o600 if path.suffix == ".key" else 0o644)
        for i, name in enumerate(self.layout.names):
            self.lab_file(
                layout.state_dir / f"patroni-{name}.yml",
                configs.patroni_config(layout, i, passwords, tools.pg_bin, archive, tools.pg_version),
            )

    def _start_etcd(self, tools: Tools, progress: Progress) -> None:
        if not self.book.running("etcd"):
            proc = procs.spawn(
                configs.etcd_argv(self.layout, str(tools.etcd)),
                log=self.layout.log_dir / "etcd.log",
                run_as=self.run_as,
                cwd=self.layout.state_dir / "etcd",
            )
            self.book.record("etcd", proc.pid)

        def ready() -> bool:
            progress.note("waiting for etcd /health")
            try:
                url = f"http://127.0.0.1:{self.layout.etcd_client_port}/health"
                return bool(httpx.get(url, timeout=1, trust_env=False).json().get("health") == "true")
            except (httpx.HTTPError, ValueError):
                return False

        if not procs.poll(ready, 30):
            raise UserError(f"etcd did not become healthy; see {self.layout.log_dir / 'etcd.log'}")

    def start_patroni(self, name: str, python: str | None = None) -> int:
        """Start node ``name``'s Patroni (also brings back a crashed node); returns its PID."""
        running = self.book.running(f"patroni-{name}")
        if running:
            return running
        i = self.index(name)
        env = self.env(i)
        proc = procs.spawn(
            [
                python or (self.patroni_python() if self.layout.patroni else sys.executable),
                "-m",
                "patroni",
                str(self.layout.state_dir / f"patroni-{name}.yml"),
            ],
            log=self.layout.log_dir / f"patroni-{name}.out",
            run_as=self.run_as,
            env=env,
            cwd=self.layout.state_dir / "data",
        )
        self.book.record(f"patroni-{name}", proc.pid)
        return proc.pid

    def _wait_members(self, progress: Progress, timeout: float) -> None:
        def ready() -> bool:
            members = (self.cluster() or {}).get("members", [])
            seen = ", ".join(f"{m['name']} {m.get('role')}/{m.get('state')}" for m in members)
            progress.note(f"waiting for one leader and {self._replicas()}: {seen or 'none yet'}")
            return self.healthy()

        if not procs.poll(ready, timeout, interval=0.5):
            raise UserError(
                f"the cluster did not reach one leader and {self._replicas()} in {timeout:.0f}s;"
                f" see the logs in {self.layout.log_dir}"
            )

    def _check_made_by(self, major: int) -> None:
        """Refuse data directories another PostgreSQL major made: they would never start."""
        for i, name in enumerate(self.layout.names):
            try:
                made = int((self.layout.data_dir(i) / "PG_VERSION").read_text().strip())
            except (OSError, ValueError):
                continue
            if made != major:
                raise UserError(
                    f"{name}'s data in {self.layout.state_dir} was made by PostgreSQL {made}, not {major};"
                    " run `pgtop-ha lab down` first or choose another --state-dir"
                )

    def _replicas(self) -> str:
        n = len(self.layout.names) - 1
        return "one streaming replica" if n == 1 else f"{n} streaming replicas"

    def leader_index(self) -> int:
        """Index of the current leader (an error when there is none)."""
        name = self.leader()
        if name is None:
            raise UserError("the lab has no leader right now; wait or run `pgtop-ha lab status`")
        return self.index(name)

    def _stanza(self, tools: Tools) -> None:
        marker = self.layout.state_dir / "pgbackrest" / ".stanza"
        if marker.exists():
            return
        i = self.leader_index()
        env = self.env(i)
        failure = ""

        def created() -> bool:
            nonlocal failure
            try:
                procs.run(
                    [str(tools.pgbackrest), f"--stanza={configs.STANZA}", "stanza-create"],
                    run_as=self.run_as, env=env, cwd=self.layout.state_dir / "pgbackrest", timeout=120,
                )  # fmt: skip
            except subprocess.CalledProcessError as exc:
                failure = exc.stderr.strip()
                # [050] lock: PostgreSQL's first async archive-push holds the stanza's archive
                # lock for a moment; stanza-create then fails at once. Wait for it, anything else
                # is a real failure.
                if "[050]" not in failure:
                    raise UserError(f"pgbackrest stanza-create failed: {failure}") from None
                return False
            return True

        if not procs.poll(created, STANZA_LOCK_WAIT_S, interval=1.0):
            raise UserError(f"pgbackrest stanza-create failed for {STANZA_LOCK_WAIT_S:.0f}s: {failure}")
        # A cluster with nothing to restore from is a problem the console names: start with a full backup.
        try:
            procs.run(
                [str(tools.pgbackrest), f"--stanza={configs.STANZA}", "--type=full", "backup"],
                run_as=self.run_as, env=env, cwd=self.layout.state_dir / "pgbackrest", timeout=300,
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            raise UserError(f"pgbackrest backup failed: {exc.stderr.strip()[:300]}") from None
        marker.touch()

    def _start_haproxy(self, tools: Tools, progress: Progress) -> None:
        if not self.book.running("haproxy"):
            cfg = self.layout.state_dir / "haproxy.cfg"
            check = procs.run([str(tools.haproxy), "-c", "-f", str(cfg)], run_as=self.run_as, check=False)
            if check.returncode != 0:
                raise UserError(f"haproxy rejected {cfg}: {check.stdout.strip()} {check.stderr.strip()}")
            proc = procs.spawn(
                [str(tools.haproxy), "-db", "-f", str(cfg)],
                log=self.layout.log_dir / "haproxy.log",
                run_as=self.run_as,
                cwd=self.layout.run_dir,
            )
            self.book.record("haproxy", proc.pid)

        def writer_up() -> bool:
            progress.note("waiting for HAProxy to route the writer")
            try:
                text = httpx.get(f"{self.layout.stats_url};csv", timeout=1, trust_env=False).text
            except httpx.HTTPError:
                return False
            names = range(len(self.layout.names))
            rows = tuple(f"pg_writer,{configs.server_name(self.layout, i)}," for i in names)
            return any(line.startswith(rows) and ",UP," in line for line in text.splitlines())

        if not procs.poll(writer_up, 30):
            raise UserError(f"HAProxy did not mark a writer UP; see {self.layout.log_dir / 'haproxy.log'}")
        if os.geteuid() == 0:
            # The console (root) reads the socket; the lab user owns it.
            with contextlib.suppress(OSError):
                self.layout.haproxy_socket.chmod(0o660)

    def _load(self, tools: Tools, rows: int, progress: Progress) -> None:
        marker = self.layout.state_dir / ".loaded"
        if marker.exists():
            return
        i = self.leader_index()
        batch = 100_000
        done = int(self.psql(f"SELECT coalesce(max(id), 0) FROM {COPY_TABLE}", i))
        started, first = time.monotonic(), done
        while done < rows:
            upto = min(done + batch, rows)
            self.psql(
                f"INSERT INTO {COPY_TABLE} (id, payload) SELECT g, repeat(md5(g::text), 6) "
                f"FROM generate_series({done + 1}, {upto}) g",
                i, timeout=300,
            )  # fmt: skip
            done = upto
            rate = (done - first) / max(time.monotonic() - started, 0.001)
            eta = (rows - done) / rate if rate else 0
            bar = "#" * int(30 * done / rows)
            print(
                f"      [{bar:<30}] {done:,}/{rows:,} rows, ETA {eta:.0f}s",
                file=self.out,
                flush=True,
            )
        env = procs.lab_env({"PGPASSFILE": str(self.layout.pgpass)})
        result = subprocess.run(
            [str(tools.pgbench), "-i", "-s", "1", "-q", "-h", "127.0.0.1",
             "-p", str(self.layout.pg_port(i)), "-U", SUPERUSER, DBNAME],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        if result.returncode != 0:
            raise UserError(f"pgbench -i failed: {result.stderr.strip()}")
        # Statistics as any table in service has them: pg_class sizes feed COPY estimates.
        self.psql(f"VACUUM (ANALYZE) {COPY_TABLE}", i, timeout=300)
        self.psql("CHECKPOINT", i)
        marker.touch()

    # ----- poolers (`up --with`) -------------------------------------------------------------
    @property
    def _poolers_file(self) -> Path:
        return self.layout.state_dir / "poolers.txt"

    def poolers(self) -> tuple[str, ...]:
        """The poolers this lab runs (what `up --with` asked for, kept across `up`s)."""
        try:
            text = self._poolers_file.read_text()[:200]
        except OSError:
            return ()
        return tuple(n for n in text.split() if n in poolers.POOLERS)

    def start_poolers(self, names: tuple[str, ...], progress: Progress) -> None:
        """Write the poolers' configs and start those not running; wait until they listen."""
        layout = self.layout
        passwords = secrets.ensure(layout)
        d = self.lab_dir(layout.pooler_dir)
        self.lab_file(d / "pgbouncer.ini", poolers.pgbouncer_ini(layout))
        self.lab_file(d / "pgbouncer-users.txt", poolers.pgbouncer_users(passwords))
        self.lab_file(d / "pgpool.conf", poolers.pgpool_conf(layout))
        self.lab_file(d / "pool_hba.conf", poolers.pool_hba())
        self.lab_file(d / "pool_passwd", poolers.pool_passwd(passwords))
        self.lab_file(d / "pcp.conf", poolers.pcp_conf(passwords[secrets.PCP]))
        if "pgpool" in names:
            # Its presence is what makes the role-change callback act: only with a pgpool.
            self.lab_file(d / "pcppass", poolers.pcppass(layout, passwords[secrets.PCP]))
        self._poolers_file.write_text(" ".join(names) + "\n")
        for name in names:
            if not self.book.running(name):
                self.book.record(name, poolers.spawn(name, layout, self.run_as))

        def listening() -> bool:
            waiting = [n for n in names if not poolers.started(n, layout)]
            progress.note(f"waiting for {', '.join(waiting)} to listen" if waiting else "listening")
            return not waiting

        if not procs.poll(listening, 60):
            logs = ", ".join(str(layout.log_dir / f"{n}.log") for n in names)
            raise UserError(f"{' / '.join(names)} did not start listening in 60s; see {logs}")

    # ----- status ---------------------------------------------------------------------------
    def status(self) -> list[MemberStatus]:
        """Every member with role, state, ports and PIDs."""
        members = {m["name"]: m for m in (self.cluster() or {}).get("members", [])}
        out = []
        for i, name in enumerate(self.layout.names):
            m = members.get(name, {})
            out.append(
                MemberStatus(
                    name=name,
                    role=m.get("role"),
                    state=m.get("state"),
                    timeline=m.get("timeline"),
                    pg_port=self.layout.pg_port(i),
                    rest_port=self.layout.rest_port(i),
                    patroni_pid=self.book.running(f"patroni-{name}"),
                    postmaster_pid=procs.postmaster_pid(self.layout.data_dir(i)),
                )
            )
        return out

    def running_pids(self) -> dict[str, int]:
        """Every process the lab started that still runs, by name."""
        return {name: pid for name in self.book.load() if (pid := self.book.running(name))}

    def stray_pids(self) -> list[int]:
        """Lab processes found by working directory (what remains after the recorded ones)."""
        return procs.pids_under(self.layout.state_dir, self.run_as.uid)

    # ----- down -----------------------------------------------------------------------------
    def down(self) -> None:
        """Stop every lab process by PID and remove the state directory."""
        progress = Progress(total=3, out=self.out)
        if not self.layout.state_dir.exists():
            progress.done(f"no lab in {self.layout.state_dir}: nothing to do")
            return
        if not self.exists():
            raise UserError(f"{self.layout.state_dir} was not made by pgtop-ha lab; refusing to touch it")
        progress.step("stopping the poolers, HAProxy, the subscriber and Patroni (which stops PostgreSQL)")
        first = [n for n in ("pgbouncer", "pgpool", "haproxy", "subscriber") if self.book.running(n)]
        procs.terminate([p for n in first if (p := self.book.running(n))], grace=10)
        patronis = [p for n in self.layout.names if (p := self.book.running(f"patroni-{n}"))]
        procs.terminate(patronis, grace=30)
        progress.step("stopping etcd and anything left in the state directory")
        if pid := self.book.running("etcd"):
            procs.terminate([pid], grace=10)
        procs.terminate(self.stray_pids(), grace=10)
        left = self.stray_pids()
        if left:
            raise UserError(f"lab processes {left} would not stop; they were sent SIGKILL")
        progress.step(f"removing {self.layout.state_dir}")
        shutil.rmtree(self.layout.state_dir)
        progress.done("lab down")
